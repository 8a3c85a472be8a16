"""ctxbench harness, laid out along the data path (docs/architecture.md): core, models, conversation, results,
executors, run, traces, and the faces users call (api, cli, sweep, notebook)."""
import importlib
import importlib.abc
import importlib.util
import os
import sys
import warnings

# Machines here are offline: litellm must use its bundled cost map and Anthropic beta-header table, and never fetch
# them (litellm's offline mode covers the catalogs it would fetch on its own).
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("LITELLM_LOCAL_ANTHROPIC_BETA_HEADERS", "True")
os.environ.setdefault("LITELLM_OFFLINE_MODE", "true")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

# tqdm's monitor thread would make the runner's worker processes unsafe to fork (harness.executors.local_processes).
import tqdm  # noqa: E402

tqdm.tqdm.monitor_interval = 0

# Module paths from before the layout by the data path that users' own strategies and scripts import: each still
# imports, as the module at its new place, with a DeprecationWarning naming that place.
MOVED_MODULES = {
    "harness.config": "harness.core.config",
    "harness.errors": "harness.core.errors",
    "harness.tokens": "harness.core.tokens",
    "harness.events": "harness.conversation.events",
    "harness.view": "harness.conversation.view",
    "harness.context": "harness.conversation.context",
    "harness.llm": "harness.models.llm",
    "harness.report": "harness.results.report",
}


class _MovedModule(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds an old module path of MOVED_MODULES and hands over the module at its new place."""

    def find_spec(self, fullname, path=None, target=None):  # type: ignore[no-untyped-def]
        if fullname not in MOVED_MODULES:
            return None
        return importlib.util.spec_from_loader(fullname, self)

    def create_module(self, spec):  # type: ignore[no-untyped-def]
        new = MOVED_MODULES[spec.name]
        warnings.warn(f"{spec.name} is now {new}; import it from there", DeprecationWarning, stacklevel=2)
        return importlib.import_module(new)

    def exec_module(self, module):  # type: ignore[no-untyped-def]
        return None


sys.meta_path.insert(0, _MovedModule())  # before any finder that might still see an old file
