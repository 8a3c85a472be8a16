"""ctxbench harness: runner, event log and views, LLM layer, metrics, results, CLI."""
import os

# Machines here are offline: litellm must use its bundled cost map and never fetch one.
os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

# tqdm's monitor thread would make the runner's worker processes unsafe to fork (harness.executors.local_processes).
import tqdm  # noqa: E402

tqdm.tqdm.monitor_interval = 0
