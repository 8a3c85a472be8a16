"""A user strategy module that fails as it is imported (issue 20 part 2): `--strategies
raises_on_import:Anything` must exit 2 naming the module, not end in a traceback."""
raise RuntimeError("this module is broken")
