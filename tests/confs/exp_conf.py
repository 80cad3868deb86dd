# Experiment (Python) on top of base_conf.py; exp.gin says the same in gin.
from conf_targets import CfgOptimizer, CfgToyNet

import alf

alf.import_config("base_conf.py")

LEARNING_RATE = 0.01

alf.config("CfgOptimizer", lr=LEARNING_RATE, momentum=0.9)
alf.config("CfgToyNet", activation="relu", optimizer=CfgOptimizer())
alf.config("cfg_make_pair", c=[LEARNING_RATE, 2])
alf.config("conf_targets.cfg_train", net_ctor=CfgToyNet, num_iterations=5)
