"""Discoverability (and `sweep` taking run's options): `ctxbench strategies [NAME]`
from the one schema that validates, the task selection options, `--dry-run`, and the help of every command."""
import argparse
import json
import re
import subprocess
import sys
from dataclasses import MISSING, fields

import pytest

from harness.cli import build_parser, main
from harness.core.config import budget_fraction, build_dataclass, config_fields, field_help
from harness.core.errors import ConfigError
from harness.run.invocation import load_matrix
from harness.core.numbers import USD
from harness.results.layout import read_runs
from harness.run.selection import TaskSelection
from strategies import REGISTRY, strategy_class
from strategies.catalog import _default_text, _nested_config
from tasks.suites import load_tasks


def _config_classes(config: type, prefix: str = ""):
    """(dotted key, field, hint) of a config dataclass and of the configs nested in it."""
    for field_, hint in config_fields(config):
        yield prefix + field_.name, field_, hint
        nested = _nested_config(hint)
        if nested is not None:
            yield from _config_classes(nested, prefix + field_.name + ".")


# ----- ctxbench strategies [NAME]

@pytest.mark.parametrize("name", sorted(REGISTRY))
def test_every_registered_strategy_has_summary_source_and_help_on_every_config_field(name):
    """Each registered strategy states what it does and its source, and no config field
    (nested ones included) lacks its one-line help, so `strategies NAME` documents every key."""
    cls = strategy_class(name)
    assert cls.summary and cls.source
    missing = [key for key, field_, _ in _config_classes(cls.Config) if not field_help(field_)]
    assert not missing, f"{name}: fields without help: {missing}"
    assert all(meaning for meaning in cls.other_keys.values()), f"{name}: other_keys without a meaning"


def test_strategies_lists_every_strategy_with_description_and_source(capsys):
    """`ctxbench strategies` is a table of name, one-line description and source."""
    assert main(["strategies"]) == 0
    out = capsys.readouterr().out
    for name in REGISTRY:
        cls = strategy_class(name)
        assert re.search(rf"^[* ] {re.escape(name)}\s+{re.escape(cls.summary)}$", out, re.M), name
        assert f"source: {cls.source}" in out


def test_strategies_name_shows_every_key_with_type_default_and_help(capsys):
    """`strategies compaction_ladder` shows each LadderConfig key with its type, default and
    help, and the keys its from_config takes beyond them (preset, compact)."""
    from strategies.compaction_ladder import LadderConfig

    assert main(["strategies", "compaction_ladder"]) == 0
    out = capsys.readouterr().out
    assert "source: seed 002" in out
    for field_ in fields(LadderConfig):
        fraction = budget_fraction(field_)
        default = f"{fraction:g} x budget" if fraction is not None else json.dumps(field_.default)
        assert f"  {field_.name}  (" in out and f"default {default}" in out
        assert field_help(field_).split()[0] in out
    assert "  turn_boundary_target  (integer or null, default 0.5 x budget (100,000 at 200k))" in out
    assert "  preset\n" in out and "  compact\n" in out


def test_strategies_name_shows_nested_configs_with_dotted_keys(capsys):
    """Nested configs (agent_reset's condenser and optional hard_condenser) are listed
    with the dotted keys a sweep's --grid takes, an Optional shown as `object or null`."""
    assert main(["strategies", "agent_reset"]) == 0
    out = capsys.readouterr().out
    assert "  condenser.warning_thresholds  (list[number], default [0.75, 0.8, 0.85, 0.9])" in out
    assert "  hard_condenser  (object or null, default null)" in out
    assert "  hard_condenser.hard_context_reset_max_retries  (integer, default 5)" in out


@pytest.mark.parametrize("name", [n for n in sorted(REGISTRY) if strategy_class(n).library is None])
def test_the_defaults_shown_are_values_the_schema_accepts(name):
    """One schema: every default `strategies NAME` prints, given back as an explicit config (a budget-scaled
    one as its value at 200k), validates and builds the same config as the empty one (at a 200k budget)."""
    cls = strategy_class(name)
    explicit = {field_.name: _shown_default_at_200k(field_) for field_, hint in config_fields(cls.Config)
                if _nested_config(hint) is None or field_.default is not MISSING}
    assert cls.from_config(explicit, name).limits == cls.from_config({}, name).limits


def _shown_default_at_200k(field_):
    """A default as `strategies NAME` prints it: JSON, or "F x budget (N at 200k)" read as N."""
    text = _default_text(field_)
    if budget_fraction(field_) is not None:
        return int(text.split("(")[1].split()[0].replace(",", ""))
    return json.loads(text)


def test_strategies_unknown_name_exits_2_with_close_matches(capsys):
    """A mistyped NAME exits 2 naming the close registered names."""
    assert main(["strategies", "compaction_lader"]) == 2
    assert "did you mean 'compaction_ladder'" in capsys.readouterr().err


def test_strategies_name_imports_no_heavy_library():
    """`strategies NAME` starts fast too (no litellm, datasets, pandas)."""
    probe = ("import contextlib, io, sys\nfrom harness.cli import main\n"
             "with contextlib.redirect_stdout(io.StringIO()):\n    code = main(['strategies', 'agent_reset'])\n"
             "print(code, [m for m in ('litellm', 'datasets', 'pandas', 'matplotlib') if m in sys.modules])")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=120)
    assert done.stdout.split(maxsplit=1) == ["0", "[]\n"], done.stderr


def test_a_closed_pipe_is_no_internal_error():
    """Ours: `ctxbench strategies | head -1` ends quietly (exit 141, as SIGPIPE), not as an internal error."""
    child = subprocess.Popen([sys.executable, "-m", "harness", "strategies"], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    child.stdout.close()  # the reader is gone before the child writes (its start takes far longer)
    assert child.wait(timeout=120) == 141
    assert "internal error" not in child.stderr.read()


# ----- --family / --task-ids / --limit

def test_limit_keeps_the_first_n_tasks_of_each_family_in_suite_order():
    """Ours (per family, as lm-evaluation-harness's --limit is per task): --limit 1 keeps
    one task of every family, the first of each, in the suite's order."""
    tasks = load_tasks("smoke")
    chosen = TaskSelection(limit=1).apply(tasks, "smoke")
    firsts = {}
    for task in tasks:
        firsts.setdefault(task.family, task.task_id)
    assert [t.task_id for t in chosen] == list(firsts.values())
    both = TaskSelection(families=("chained_lookup",), limit=2).apply(tasks, "smoke")
    assert [t.task_id for t in both] == ["chained_lookup-smoke-0", "chained_lookup-smoke-1"]


@pytest.mark.parametrize("argv, message", [
    (["--family", "work_queu"], "did you mean 'work_queue'"),
    (["--task-ids", "work_queue-smoke-1"], "did you mean 'work_queue-smoke-0'"),
    (["--family", "work_queue", "--task-ids", "chained_lookup-smoke-0"], "leaves no task"),
    (["--family", ","], "--family: expected comma-separated names"),
])
def test_bad_selection_exits_2_before_anything_is_written(tmp_path, capsys, argv, message):
    """An unknown family or task id exits 2 with close matches, an empty selection exits 2;
    nothing is written under --out."""
    out = tmp_path / "out"
    assert main(["run", "--suite", "smoke", "--strategies", "none", "--out", str(out), "--no-progress", *argv]) == 2
    assert message in capsys.readouterr().err
    assert not out.exists()


def test_selection_is_recorded_and_resume_rebuilds_it(tmp_path, capsys):
    """`config.json` records the selection and holds only the selected tasks, so --resume
    runs exactly those; --resume refuses a selection option (the matrix is config.json's)."""
    out = tmp_path / "out"
    assert main(["run", "--suite", "smoke", "--strategies", "none", "--family", "chained_lookup,work_queue",
                 "--limit", "1", "--out", str(out), "--no-progress", "--workers", "1"]) == 0
    config = json.loads((out / "config.json").read_text())
    assert config["selection"] == {"families": ["chained_lookup", "work_queue"], "task_ids": [], "limit": 1}
    assert [t.task_id for t in load_matrix(out).tasks] == ["chained_lookup-smoke-0", "work_queue-smoke-0"]
    assert sorted(r["task_id"] for r in read_runs(out)) == ["chained_lookup-smoke-0", "work_queue-smoke-0"]
    capsys.readouterr()
    assert main(["run", "--resume", str(out), "--no-progress"]) == 0
    assert len(read_runs(out)) == 2
    assert main(["run", "--resume", str(out), "--limit", "2"]) == 2
    assert "drop --limit" in capsys.readouterr().err


# ----- --dry-run

DRY = ["--suite", "smoke", "--strategies", "none,observation_masking", "--limit", "1", "--no-progress"]


def test_dry_run_of_a_real_model_needs_no_key_writes_nothing_and_prices_the_mock(tmp_path, capsys, monkeypatch):
    """--dry-run with a real model and no API key prints the cells and the mock's tokens and
    cost billed as that model; nothing is written under --out. The same command without --dry-run fails for
    the missing key, so the dry run did not take the real model's path."""
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    out = tmp_path / "out"
    model = "anthropic/claude-sonnet-4-5"
    assert main(["run", *DRY, "--model", model, "--out", str(out), "--dry-run"]) == 0
    text = capsys.readouterr().out
    assert "10 cells (2 strategies x 5 families, 1 seed)" in text
    assert f"billed as {model}, anthropic-style prompt caching" in text
    assert "without" in text and "A real model takes other steps" in text
    assert "chained_lookup-smoke-0--none--s0" in text
    assert not out.exists()
    assert main(["run", *DRY, "--model", model, "--out", str(out)]) == 2
    assert "ANTHROPIC_API_KEY" in capsys.readouterr().err


def test_dry_run_figures_are_the_mock_runs_own(tmp_path, capsys):
    """The estimate is the mock's own behaviour on these cells: its tokens and cost equal
    the sums of runs.jsonl of the same matrix run with the mock billed as the model."""
    model = "anthropic/claude-sonnet-4-5"
    assert main(["run", *DRY, "--model", model, "--dry-run"]) == 0
    text = capsys.readouterr().out
    out = tmp_path / "out"
    assert main(["run", *DRY, "--price-model", model, "--out", str(out), "--workers", "1"]) == 0
    rows = read_runs(out)
    assert f"input tokens  {sum(r['input_tokens'] for r in rows):,} (cached {sum(r['cached_tokens'] for r in rows):,}" \
        in text
    assert f"output tokens {sum(r['output_tokens'] for r in rows):,}" in text
    assert f"cost          {USD(sum(r['cost_usd'] for r in rows))} with prompt caching, " \
           f"{USD(sum(r['cost_usd_uncached'] for r in rows))} without" in text


def test_dry_run_runs_here_whatever_the_executor(capsys, monkeypatch):
    """Ours: `--dry-run --executor ray` estimates on local processes without starting Ray (the mock's runs need
    no cluster); the executor options are still checked (an address without `--executor ray` exits 2)."""
    from harness.executors import ray_cluster

    monkeypatch.setattr(ray_cluster, "import_ray", lambda: None)  # as if the extra were installed

    def no_cluster(*args, **kwargs):
        raise AssertionError("a dry run started Ray")

    monkeypatch.setattr(ray_cluster, "RayCluster", no_cluster)
    one_cell = ["--suite", "smoke", "--family", "work_queue", "--strategies", "none", "--no-progress", "--dry-run"]
    assert main(["run", *one_cell, "--executor", "ray"]) == 0
    assert "work_queue-smoke-0--none--s0" in capsys.readouterr().out
    assert main(["run", *one_cell, "--ray-address", "localhost:6379"]) == 2
    assert "--ray-address" in capsys.readouterr().err


@pytest.mark.parametrize("argv, style", [
    (["--model", "gpt-4o"], "openai"), (["--model", "anthropic/claude-sonnet-4-5"], "anthropic"),
    (["--model", "gpt-4o", "--cache-style", "none"], "none"),
    (["--model", "openai/gpt-5.6"], "openai-breakpoints"),
])
def test_dry_run_caches_as_the_models_provider_unless_told(capsys, argv, style):
    """Ours: a real model's dry run simulates its provider's prompt cache (Anthropic-style for Claude, OpenAI's
    breakpoints for its GPT-5.6 family and later, else automatic prefix caching), unless --cache-style is given."""
    assert main(["run", "--suite", "smoke", "--family", "work_queue", "--strategies", "none", "--no-progress",
                 "--dry-run", *argv]) == 0
    assert f", {style}-style prompt caching, a " in capsys.readouterr().out


def test_dry_run_names_the_window_it_ran_with(capsys):
    """Ours: the estimate says which window the stand-in ran with (the window decides where a run overflows,
    so it moves the estimate): --window when given, the mock's 200,000 tokens for the mock."""
    argv = ["run", "--suite", "smoke", "--family", "work_queue", "--strategies", "none", "--no-progress", "--dry-run"]
    assert main([*argv, "--model", "anthropic/claude-sonnet-4-5", "--window", "32000"]) == 0
    assert "anthropic-style prompt caching, a 32,000-token window:" in capsys.readouterr().out
    assert main(argv) == 0
    assert "a 200,000-token window:" in capsys.readouterr().out


def test_dry_run_of_an_unpriced_model_asks_for_a_price_model(capsys):
    """A model litellm's cost map does not price cannot be estimated: exit 2 naming
    --price-model."""
    assert main(["run", *DRY, "--model", "openai/my-local-model", "--api-base", "http://127.0.0.1:9/v1",
                 "--dry-run"]) == 2
    assert "--price-model" in capsys.readouterr().err


def test_dry_run_does_not_combine_with_resume(tmp_path, capsys):
    """Ours: --dry-run estimates a new matrix; with --resume it exits 2."""
    assert main(["run", "--resume", str(tmp_path), "--dry-run"]) == 2
    assert "--dry-run" in capsys.readouterr().err


def test_sweep_dry_run_counts_every_grid_point(tmp_path, capsys):
    """`sweep --dry-run` prints the cells of every point and the baseline, writes nothing."""
    out = tmp_path / "out"
    assert main(["sweep", "--strategy", "observation_masking", "--grid", "keep_last=1,3", "--also", "none",
                 "--suite", "smoke", "--family", "chained_lookup", "--no-progress", "--out", str(out),
                 "--dry-run"]) == 0
    text = capsys.readouterr().out
    assert "9 cells (3 strategies x 1 family, 1 seed)" in text
    assert "observation_masking[keep_last=1]" in text and not out.exists()


# ----- sweep takes run's options

def _options(parser: argparse.ArgumentParser, command: str) -> set[str]:
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices[command]
    return {option for action in sub._actions for option in action.option_strings}


def test_sweep_takes_every_option_of_run_but_the_strategy_list():
    """Every spending, resume, cache, concurrency, retry and selection option of `run` is
    one of `sweep`'s (one shared option function)."""
    parser = build_parser()
    missing = _options(parser, "run") - _options(parser, "sweep") - {"--strategies", "--strategy-config"}
    assert not missing
    assert {"--max-cost-usd", "--max-total-cost-usd", "--resume", "--cache", "--max-concurrency", "--retry",
            "--mock-faults", "--dry-run", "--family", "--task-ids", "--limit"} <= _options(parser, "sweep")


def test_sweep_forwards_run_options_and_resumes(tmp_path, capsys):
    """Sweep's --cache, --max-cost-usd, --max-concurrency, --retry and --limit reach the
    matrix (config.json); `sweep --resume DIR` finishes it as run's resume does, refusing a new grid."""
    out, cache = tmp_path / "out", tmp_path / "cache"
    argv = ["sweep", "--strategy", "observation_masking", "--grid", "keep_last=1,3", "--suite", "smoke",
            "--family", "work_queue", "--limit", "1", "--no-progress", "--workers", "1", "--out", str(out)]
    assert main([*argv, "--cache", str(cache), "--max-cost-usd", "5", "--max-concurrency", "2",
                 "--retry", '{"max_retries": 1}']) == 0
    config = json.loads((out / "config.json").read_text())
    assert config["max_cost_usd"] == 5
    main_profile = config["profiles"]["main"]
    assert main_profile["response_cache"] == str(cache) and main_profile["max_concurrency"] == 2
    assert main_profile["retry"] == {"max_retries": 1}
    assert [t["task_id"] for t in config["tasks"]] == ["work_queue-smoke-0"]
    capsys.readouterr()
    (out / "runs.jsonl").write_text((out / "runs.jsonl").read_text().splitlines()[0] + "\n")
    assert main(["sweep", "--resume", str(out), "--no-progress"]) == 0
    assert "recommended: **observation_masking[keep_last=" in capsys.readouterr().out
    assert len(read_runs(out)) == 2
    assert main(["sweep", "--resume", str(out), "--grid", "keep_last=5"]) == 2
    assert "drop --grid" in capsys.readouterr().err


def test_sweep_max_total_cost_stops_starting_runs(tmp_path, capsys):
    """Sweep's --max-total-cost-usd is run's: once spent, no further run starts and the
    rest are listed in unstarted.json."""
    out = tmp_path / "out"
    assert main(["sweep", "--strategy", "observation_masking", "--grid", "keep_last=1,3,5", "--suite", "smoke",
                 "--family", "chained_lookup", "--no-progress", "--workers", "1", "--out", str(out),
                 "--max-total-cost-usd", "0.000001"]) == 0
    assert json.loads((out / "unstarted.json").read_text())["run_ids"]


# ----- help

def _parsers(parser: argparse.ArgumentParser, path=()):
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _parsers(sub, (*path, name))


def test_every_option_and_subcommand_has_help(capsys):
    """`--help` of every subcommand reads well: each option, argument and subcommand says
    what it is, and every help page prints."""
    for path, parser in _parsers(build_parser()):
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                assert all(choice.help for choice in action._choices_actions), path
            elif not isinstance(action, (argparse._HelpAction, argparse._VersionAction)):
                assert action.help, f"{' '.join(path)} {action.option_strings or action.dest} has no help"
        with pytest.raises(SystemExit) as exit_:
            main([*path, "--help"])
        assert exit_.value.code == 0
    capsys.readouterr()


def test_sweep_help_example_names_a_real_key():
    """The sweep help's example named a key no strategy has: the example's strategy and
    grid key exist and its values validate."""
    epilog = next(sub for path, sub in _parsers(build_parser()) if path == ("sweep",)).epilog
    strategy, key, values = re.search(r"--strategy (\S+) --grid (\w+)=(\S+)", epilog).groups()
    cls = strategy_class(strategy)
    for value in values.split(","):
        build_dataclass(cls.Config, {key: int(value)}, "example")
    with pytest.raises(ConfigError):
        build_dataclass(cls.Config, {key + "_typo": 1}, "example")


def test_grid_help_examples_name_real_keys():
    """The --grid help's examples (it named `stages`, a key no strategy has) are keys of the
    strategies they name, and their values validate there."""
    from harness.sweep import Grid, parse_grid_args, validate_grid

    sweep = next(sub for path, sub in _parsers(build_parser()) if path == ("sweep",))
    text = " ".join(next(a for a in sweep._actions if "--grid" in a.option_strings).help.split())
    examples = re.findall(r"([\w.]+=\S+) \((\w+)\)", text)
    assert len(examples) == 2
    for example, strategy in examples:
        axes = parse_grid_args([example])
        assert len(validate_grid(Grid(strategy=strategy, axes=axes))) >= 2


def test_strategies_shows_a_users_strategy_by_import_path(capsys):
    """`strategies pkg.module:Class` describes a user's strategy from its docstring and its
    Config dataclass (a field without help still shows its type and default)."""
    assert main(["strategies", "masking:KeepLastToolResults"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("masking:KeepLastToolResults: Before each request, masks every tool result")
    assert "source: user strategy masking:KeepLastToolResults" in out
    assert "  keep  (integer, default 2)" in out
