"""A user strategy module that fails as it is imported: `--strategies
raises_on_import:Anything` must exit 2 naming the module, not end in a traceback."""
raise RuntimeError("this module is broken")
