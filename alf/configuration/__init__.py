"""The implementation of alf's configuration registry, split by job.

Use the public module ``alf.config_util`` (or the same names on ``alf``); the modules of
this package are internal and may change. ``alf.config_util`` lists what each one does.
"""
