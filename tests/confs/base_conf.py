# Base experiment (Python); base.gin says the same in gin.
import alf

alf.config("CfgToyNet", hidden_size=16, activation="tanh")
alf.config("cfg_make_pair", b=20)
