"""benchmarks/atari_ppo.py: the alf run's parameters and the record of a run."""

from benchmarks import atari_ppo


def test_alf_params_whole_iterations_and_only_the_final_evaluation():
    params = atari_ppo.alf_params("PongNoFrameskip-v4", 250_000, 2)
    # 250,000 agent steps = 244 whole iterations of 8 envs x 128 steps = 249,856 steps.
    assert "TrainerConfig.num_iterations=244" in params
    assert "TrainerConfig.num_env_steps=249856" in params
    assert "TrainerConfig.eval_interval=245" in params
    assert "create_environment.env_name='PongNoFrameskip-v4'" in params
    assert "TrainerConfig.num_threads=2" in params
    assert "TrainerConfig.summary_interval=1" in params


def test_record_counts_frames_and_the_last_values():
    curve = [(10_240, 1.0, 2.0), (20_480, 5.0, 3.5)]  # (env steps, wall time, return)
    run = atari_ppo._record("alf", "BreakoutNoFrameskip-v4", 0, 20_480, 40.96, curve, 7.5)
    assert run["frames"] == 81_920 and run["fps"] == 2_000.0
    assert run["train_return"] == 3.5 and run["eval_return"] == 7.5
    assert run["curve"] == [[40_960, 2.0], [81_920, 3.5]]
    table = atari_ppo.markdown([run])
    assert "| alf | BreakoutNoFrameskip-v4 | 0 | 81,920 |" in table
    assert "398.0 ± 33.3" in table  # the published SB3 figure for Breakout


def test_curve_rows_put_the_return_at_each_window_end_beside_the_published_one():
    # alf points every 4,096 frames would do; three points are enough to check the choice
    run = dict(
        framework="alf",
        env="BreakoutNoFrameskip-v4",
        seed=0,
        frames=520_000,
        curve=[[245_760, 2.5], [249_856, 3.0], [499_712, 6.5], [520_000, 9.0]],
    )
    rows = atari_ppo.curve_rows(run)
    # windows ending at 250k and 500k; 750k is past the run
    # window means: (2.5 + 3.0) / 2 and 6.5 alone (520,000 is past the 500k window)
    assert rows == [
        ["250,000", "3.0", "3.6", "2.75", "294", "1.99"],
        ["500,000", "6.5", "6.9", "6.50", "234", "3.61"],
    ]
    table = atari_ppo.markdown(
        [dict(run, wall_s=100.0, fps=5_200.0, train_return=9.0, eval_return=None)]
    )
    assert "| 500,000 | 6.5 | 6.9 | 6.50 | 234 | 3.61 |" in table
    assert "rl-trained-agents" in table


def test_published_curve_windows_are_250k_frames_up_to_4m():
    rows = atari_ppo.PUBLISHED_CURVE["BreakoutNoFrameskip-v4"]
    assert [r[0] for r in rows] == list(range(250_000, 4_000_001, 250_000))
