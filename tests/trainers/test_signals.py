"""Stop signals: an evaluation in progress ends at its next env step; a second signal exits
at once; a signal ignored on purpose (nohup, a background job) stays ignored."""

import os
import signal
import subprocess
import sys
import threading
import time

from alf.trainers.signals import SignalCatcher
from tests.trainers.test_policy_trainer import REPO, load_ckpt, make_trainer


def test_sigterm_during_a_long_evaluation_stops_it_and_checkpoints(tmp_path):
    # an evaluation of 100,000 CartPole episodes after iteration 2 would take many minutes
    trainer = make_trainer(
        tmp_path,
        "TrainerConfig.num_iterations=1000",
        "TrainerConfig.eval_interval=2",
        "TrainerConfig.num_eval_episodes=100000",
    )
    evaluate = trainer._evaluator.evaluate
    signalled = {}

    def evaluate_then_signal():
        timer = threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGTERM))
        timer.start()
        signalled["at"] = time.time() + 0.5
        return evaluate()

    trainer._evaluator.evaluate = evaluate_then_signal
    trainer.train()
    assert time.time() - signalled["at"] < 10  # the promise; here it takes well under 1 s
    assert trainer.iteration == 2
    assert load_ckpt(tmp_path, 2)["iteration"] == 2


_TWICE = """
import os, signal, sys, time
from alf.trainers.signals import SignalCatcher
with SignalCatcher() as catcher:
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(0.2)
    print("first:", catcher.caught, flush=True)
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(5)
print("not reached", flush=True)
"""


def test_a_second_signal_exits_at_once():
    env = dict(os.environ, PYTHONPATH=REPO + os.pathsep + os.environ.get("PYTHONPATH", ""))
    start = time.time()
    out = subprocess.run(
        [sys.executable, "-c", _TWICE], capture_output=True, text=True, env=env, timeout=120
    )
    assert out.returncode == 128 + signal.SIGTERM
    assert out.stdout == "first: SIGTERM\n"
    assert out.stderr == "Received SIGTERM again: exiting now, without a checkpoint\n"
    assert time.time() - start < 60  # not the 5 s sleep's end: a bound against a hang only


def test_an_ignored_signal_stays_ignored():
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        with SignalCatcher():
            assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
            assert signal.getsignal(signal.SIGTERM) not in (signal.SIG_IGN, signal.SIG_DFL)
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, previous)
