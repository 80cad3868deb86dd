"""alf.summary.hparams: the operative configuration as flat hyperparameters, and the
HParams plugin summaries read back from the event file."""

import functools
import os

import torch
from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
from tensorboard.plugins.hparams import metadata, plugin_data_pb2

from alf.algorithms.ppo_algorithm import PPOAlgorithm
from alf.configuration.writer import DEFINED_CONFIGS_KEY
from alf.networks.value_networks import ValueNetwork
from alf.summary import hparams


def test_flat_configuration_names_and_values():
    operative = [
        (
            "alf.algorithms.config.TrainerConfig",
            {"unroll_length": 16, "algorithm_ctor": PPOAlgorithm},
        ),
        ("alf.optimizers.optimizers.Adam", {"lr": 1e-3, "eps": None}),
        ("my_conf.Adam", {"lr": 0.5}),
        (
            "alf.algorithms.ppo_algorithm.PPOAlgorithm",
            {"value_network_ctor": functools.partial(ValueNetwork, activation=torch.tanh)},
        ),
        (DEFINED_CONFIGS_KEY, {"hidden": 64, "flag": True}),
    ]
    assert hparams.flat_configuration(operative) == {
        "PPOAlgorithm.value_network_ctor": "functools.partial("
        "alf.networks.value_networks.ValueNetwork, activation=torch.tanh)",
        "TrainerConfig.algorithm_ctor": "alf.algorithms.ppo_algorithm.PPOAlgorithm",
        "TrainerConfig.unroll_length": 16,
        "flag": True,
        "hidden": 64,
        "my_conf.Adam.lr": 0.5,
        "optimizers.Adam.eps": "None",
        "optimizers.Adam.lr": 1e-3,
    }


def test_plain_value_cuts_long_text_and_keeps_numbers():
    assert hparams.plain_value(float("nan")) == "nan"
    assert hparams.plain_value(3) == 3 and hparams.plain_value(False) is False
    long = hparams.plain_value(list(range(1000)))
    assert len(long) == 500 and long.endswith("...") and long.startswith("[0, 1, 2")


def _plugin_content(directory):
    accumulator = EventAccumulator(str(directory))
    accumulator.Reload()
    return accumulator.PluginTagToContent(metadata.PLUGIN_NAME)


def test_write_hparams_is_read_back_from_the_event_file(tmp_path):
    values = {"TrainerConfig.unroll_length": 16, "PPOLoss.gamma": 0.98, "name": "x", "b": True}
    directory = hparams.write_hparams(str(tmp_path), values)
    assert directory == str(tmp_path)
    assert [n for n in os.listdir(tmp_path) if n.startswith("events.")]
    assert hparams.read_hparams(str(tmp_path)) == {
        "TrainerConfig.unroll_length": 16.0,
        "PPOLoss.gamma": 0.98,
        "name": "x",
        "b": True,
    }
    content = _plugin_content(tmp_path)
    experiment = plugin_data_pb2.HParamsPluginData.FromString(
        content[metadata.EXPERIMENT_TAG]
    ).experiment
    assert [(m.name.group, m.name.tag) for m in experiment.metric_infos] == list(hparams.METRICS)
    kinds = {h.name: h.type for h in experiment.hparam_infos}
    assert kinds["name"] == 1 and kinds["b"] == 2 and kinds["PPOLoss.gamma"] == 3  # str, bool, f64


def test_read_hparams_of_a_directory_without_them(tmp_path):
    assert hparams.read_hparams(str(tmp_path)) is None
