"""Hyperparameters: the run's operative configuration as flat ``{name: value}``, written to
TensorBoard's HParams view and given to experiment trackers (``alf.summary.wandb_logger``).

``flat_configuration()`` turns ``alf.get_operative_configs()`` (the configured values the
run used, what ``alf_config.py`` shows) into ``{"TrainerConfig.unroll_length": 16, ...}``:
names are the shortest unique suffix of the configurable's full name, and values are
kept when they are a bool, int, float or str, else written as their Python source text
(``functools.partial(alf.networks...ActorDistributionNetwork, fc_layer_params=(64, 64))``).

``write_hparams(root_dir, hparams)`` writes the HParams plugin's experiment and
session-start summaries to an event file directly in ``root_dir`` (the run TensorBoard
calls ``.``, or the run's own name under a parent ``--logdir``), naming as metrics the
scalars of ``root_dir/train`` and ``root_dir/eval`` (``METRICS``): TensorBoard's HParams
tab then lists each run with its hyperparameters and its last metric values, so runs
under one ``--logdir`` can be compared and filtered by any configured value.
"""

from __future__ import annotations

import math
import os

from alf.configuration.writer import DEFINED_CONFIGS_KEY

#: ``(group, tag)`` of the scalars shown as metrics in the HParams view: the group is the
#: subdirectory of root_dir the scalar is in.
METRICS = (
    ("eval", "Metrics/AverageReturn"),
    ("train", "Metrics/AverageReturn"),
    ("eval", "Metrics/AverageEpisodeLength"),
    ("train", "Metrics/AverageEpisodeLength"),
)

_MAX_TEXT = 500  # characters of a value's text kept (TensorBoard's table stays readable)


def plain_value(value):
    """``value`` as a bool, int, float or str: numbers and strings as they are, anything
    else as its Python source text (its ``repr`` when it has none), cut to 500 chars."""
    if isinstance(value, bool) or type(value) in (int, str):
        return value
    if type(value) is float:
        return value if math.isfinite(value) else str(value)
    if type(value).__module__ == "numpy" and getattr(value, "ndim", None) == 0:
        return plain_value(value.item())
    from alf.configuration.writer import _NotRenderable, _Renderer

    try:
        text = _Renderer().render(value)
    except _NotRenderable:
        text = repr(value)
    except Exception:  # a value whose rendering fails must not stop a run
        text = repr(value)
    return text if len(text) <= _MAX_TEXT else text[: _MAX_TEXT - 3] + "..."


def short_names(full_names) -> dict[str, str]:
    """``{full_name: shortest dotted suffix unique among full_names}``."""
    full_names = list(full_names)
    result = {}
    for full in full_names:
        parts = full.split(".")
        for n in range(1, len(parts) + 1):
            suffix = ".".join(parts[-n:])
            clashes = [
                f for f in full_names if f != full and (f == suffix or f.endswith("." + suffix))
            ]
            if not clashes:
                break
        result[full] = suffix
    return result


def flat_configuration(operative=None) -> dict:
    """The operative configuration as ``{"Name.arg": plain value}`` sorted by name.

    Args:
        operative: ``alf.get_operative_configs()``'s list (None: read it now).
    """
    if operative is None:
        import alf

        operative = alf.get_operative_configs()
    names = short_names(name for name, _ in operative if name != DEFINED_CONFIGS_KEY)
    flat = {}
    for name, args in operative:
        for arg, value in args.items():
            key = arg if name == DEFINED_CONFIGS_KEY else f"{names[name]}.{arg}"
            flat[key] = plain_value(value)
    return dict(sorted(flat.items()))


def hparams_summaries(hparams: dict, metrics=METRICS) -> list:
    """The HParams plugin's experiment and session-start ``Summary`` protos.

    Args:
        hparams: ``{name: bool | int | float | str}``.
        metrics: ``(group, tag)`` of the scalars shown as metrics.
    """
    from tensorboard.compat.proto.summary_pb2 import Summary, SummaryMetadata
    from tensorboard.plugins.hparams import api_pb2, metadata, plugin_data_pb2

    start = plugin_data_pb2.SessionStartInfo()
    infos = []
    for name, value in hparams.items():
        if isinstance(value, bool):
            start.hparams[name].bool_value = value
            kind = "DATA_TYPE_BOOL"
        elif isinstance(value, (int, float)):
            start.hparams[name].number_value = float(value)
            kind = "DATA_TYPE_FLOAT64"
        else:
            start.hparams[name].string_value = str(value)
            kind = "DATA_TYPE_STRING"
        infos.append(api_pb2.HParamInfo(name=name, type=api_pb2.DataType.Value(kind)))
    experiment = api_pb2.Experiment(
        hparam_infos=infos,
        metric_infos=[
            api_pb2.MetricInfo(name=api_pb2.MetricName(group=group, tag=tag))
            for group, tag in metrics
        ],
    )

    def summary(tag, **data):
        content = plugin_data_pb2.HParamsPluginData(version=metadata.PLUGIN_DATA_VERSION, **data)
        plugin = SummaryMetadata.PluginData(
            plugin_name=metadata.PLUGIN_NAME, content=content.SerializeToString()
        )
        return Summary(value=[Summary.Value(tag=tag, metadata=SummaryMetadata(plugin_data=plugin))])

    return [
        summary(metadata.EXPERIMENT_TAG, experiment=experiment),
        summary(metadata.SESSION_START_INFO_TAG, session_start_info=start),
    ]


def write_hparams(root_dir: str, hparams: dict, metrics=METRICS) -> str:
    """Write the HParams summaries to a new event file in ``root_dir``; return its dir."""
    from torch.utils.tensorboard.writer import FileWriter

    writer = FileWriter(os.path.abspath(root_dir))
    try:
        for summary in hparams_summaries(hparams, metrics):
            writer.add_summary(summary)
    finally:
        writer.close()
    return writer.get_logdir()


def read_hparams(root_dir: str) -> dict | None:
    """``{name: value}`` of the newest session-start HParams summary in the event files
    directly in ``root_dir`` (None when there is none)."""
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    from tensorboard.plugins.hparams import metadata, plugin_data_pb2

    accumulator = EventAccumulator(root_dir)
    accumulator.Reload()
    try:
        content = accumulator.PluginTagToContent(metadata.PLUGIN_NAME)
    except KeyError:
        return None
    raw = content.get(metadata.SESSION_START_INFO_TAG)
    if raw is None:
        return None
    data = plugin_data_pb2.HParamsPluginData.FromString(raw)
    result = {}
    for name, value in data.session_start_info.hparams.items():
        kind = value.WhichOneof("kind")
        result[name] = getattr(value, kind) if kind else None
    return result
