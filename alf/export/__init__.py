"""Exporting a trained policy for inference outside alf (``alf-export``, ``alf.bin.export``):
``policy_export`` (the policy module and its files) and ``export_formats`` (the formats)."""
