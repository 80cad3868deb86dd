"""The launcher side of population-based training: ``launcher`` (the members as processes
or Slurm jobs) and ``status`` (the population table), for ``alf.bin.pbt_launch``. The
trainer side (the member, its hyperparameters, mutations, the rule, the workspace) is
``alf.pbt``."""
