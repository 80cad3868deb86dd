"""Decentralized population-based training (PBT): the trainer-independent core.

Each member of a population trains in its own process and meets the others only
through a shared folder:

``alf.pbt.mutation``
    typed, bounded mutations of hyperparameters, declared as data (a Python dict
    or list, or a JSON / YAML file), and ``mutate``.
``alf.pbt.rule``
    ``decide``: whether a member keeps training, only mutates its hyperparameters,
    or copies a better member's weights (the DexPBT replacement rule).
``alf.pbt.workspace``
    ``Workspace``: the shared folder, its checkpoints, member descriptions,
    lineage log and best checkpoints; everything read from it is validated and
    nothing is unpickled.
``alf.pbt.files``
    the file primitives under it: atomic writes, one-line JSON appends, checkpoint
    bytes that ``torch.load(weights_only=True)`` reads.

Wired into alf:

``alf.pbt.config``
    ``PBTConfig``, the configurable of a member (off unless ``workspace`` is set).
``alf.pbt.hyperparameters``
    where a mutable ``Name.arg`` lives in a built algorithm, and changing it there.
``alf.pbt.member``
    ``PBTMember``: the hook ``PolicyTrainer`` calls after each iteration.
``alf.tuning.pbt.launcher`` and ``alf.tuning.pbt.status``
    running the members as processes or Slurm jobs, and the population table, for
    ``alf.bin.pbt_launch``.

The core modules above do not import the trainer; importing ``alf.pbt`` itself loads
no module.
"""
