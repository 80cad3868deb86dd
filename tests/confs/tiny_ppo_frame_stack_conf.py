"""``tiny_ppo_conf.py`` with the last 3 observations stacked (``FrameStacker``) and then
normalized (``ObservationNormalizer``), for the export tests: a policy whose data
transformers keep a state across steps."""

import alf
from alf.data_transformers import FrameStacker, ObservationNormalizer

alf.import_config("tiny_ppo_conf.py")

alf.config("FrameStacker", stack_size=3)
alf.config("TrainerConfig", data_transformer_ctor=[FrameStacker, ObservationNormalizer])
