"""Exporting a trained policy for inference outside alf (``alf-export``, ``alf.bin.export``):
``policy_export`` (the policy module and its files), ``stateful`` (the state of a recurrent
or frame-stacked policy as inputs and outputs), ``export_formats`` (the formats),
``runtime`` (``ExportedPolicy``: loading and stepping a file), ``parity`` (whole-episode
parity with ``predict_step``) and ``policy_inputs`` (random inputs, action differences)."""
