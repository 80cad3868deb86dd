"""Example conf files.

ALF's confs import their base confs as modules (``from alf.examples import ppo_conf``).
alf's own are here; the directories listed in the ``ALF_CONFIG_PATH`` environment
variable (``os.pathsep``-separated, the same variable ``alf.import_config`` searches)
are added to this package's path, after alf's own directory, so a collection of confs
kept outside alf can import its own bases the same way (alf's base confs win).
"""

import os

__path__ += [  # the package's module search path
    d for d in os.environ.get("ALF_CONFIG_PATH", "").split(os.pathsep) if d and os.path.isdir(d)
]
