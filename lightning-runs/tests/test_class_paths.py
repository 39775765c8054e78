"""Class paths in a config run nothing before they are judged (issue 31, item 3): `class_path: os.system` with
`init_args: {command: touch FILE}` created FILE, then printed a refusal. Wherever a config file, a file a value
names, or the command line puts a class path, a function, a class of the wrong base or a module that does not
define the name is refused in one line, exit 2, with FILE absent, no run folder and no module imported."""

import sys
from pathlib import Path

import pytest
import tiny_networks
import yaml
from tiny_runs import assert_kept, each_row_once_daily, refusal, run, snapshot

MARKER = "ran.txt"  # what `touch` would create, had the config's command run
RUNS = {"command": f"touch {MARKER}"}  # os.system's argument
POPEN = {"args": f"touch {MARKER}", "shell": True}  # a class, but not of any base a config option takes


def spec(class_path: str, init_args: dict | None = None) -> dict:
    return {"class_path": class_path, **({"init_args": init_args} if init_args is not None else {})}


# Every place a class path can stand in the CLI's configs: the model and the data (chosen by class path), the
# model's network (a factory of nn.Modules; tiny_networks.cli_main's model takes one), a class nested in a class
# chosen by class path, the trainer's class-typed options, and LightningCLI's optimizer and scheduler.
def places(value) -> dict[str, dict]:
    return {
        "model": {"model": value},
        "model.network": {"model": {"network": value}},
        "nested in model": {"model": spec("tiny_networks.WithNetwork", {"network": value})},
        "data": {"data": value},
        "trainer.callbacks": {"trainer": {"callbacks": [value]}},
        "trainer.logger": {"trainer": {"logger": value}},
        "trainer.plugins": {"trainer": {"plugins": [value]}},
        "trainer.strategy": {"trainer": {"strategy": value}},
        "trainer.accelerator": {"trainer": {"accelerator": value}},
        "trainer.profiler": {"trainer": {"profiler": value}},
        "optimizer": {"optimizer": value},
        "lr_scheduler": {"lr_scheduler": value},
    }


VALUES = {
    "a function": spec("os.system", RUNS),
    "a class of another base": spec("subprocess.Popen", POPEN),
    "not defined": spec("this.Zen", {}),
    "a plain name not defined": "antigravity.Fly",
}
PLACES = list(places(None))


def fit(*args: str):
    """`fit` of the tiny classifier around a network (tiny_networks.py), in this process."""
    return run("fit", *args, cli=tiny_networks.cli_main)


def assert_nothing_ran(before: dict[str, str]) -> None:
    assert not Path(MARKER).exists(), "the config's command ran"
    assert "this" not in sys.modules and "antigravity" not in sys.modules, "imported before being judged"
    assert not assert_kept(before, snapshot()), "a refused command wrote files"


# Every place with every value is 48 fits to refuse: daily, each place once, the values in turn.
@pytest.mark.parametrize("place,value", each_row_once_daily(PLACES, VALUES))
def test_a_class_path_in_a_config_file_is_refused_before_anything_runs(place, value, capsys):
    Path("evil.yaml").write_text(yaml.safe_dump(places(value)[place]))
    before = snapshot()
    refusal(capsys, lambda: fit("--config", "evil.yaml"))
    assert_nothing_ran(before)
    assert "Beautiful is better than ugly" not in capsys.readouterr().out


def test_the_refusal_of_a_function_names_the_option_and_says_it_is_no_class(capsys):
    Path("evil.yaml").write_text(yaml.safe_dump(places(spec("os.system", RUNS))["model.network"]))
    error = refusal(capsys, lambda: fit("--config", "evil.yaml"))
    assert error == (
        "error: --model.network.class_path os.system: a function, not a class; a class_path names a class"
        " (module.Class), built with its init_args"
    )


def test_a_module_that_does_not_define_the_name_is_not_imported_and_the_line_says_so(capsys):
    Path("evil.yaml").write_text(yaml.safe_dump({"model": {"network": "this.Zen"}}))
    error = refusal(capsys, lambda: fit("--config", "evil.yaml"))
    assert (
        error
        == "error: --model.network: this.Zen: this does not define Zen, so nothing was imported; give a class path"
    )


@pytest.mark.parametrize(
    "args",
    [
        ["--model.network.class_path", "os.system", "--model.network.init_args.command", RUNS["command"]],
        ["--model.network", yaml.safe_dump(spec("os.system", RUNS), default_flow_style=True)],
        ["--trainer.callbacks", yaml.safe_dump([spec("os.system", RUNS)], default_flow_style=True)],
        ["--trainer.callbacks+=os.system", f"--trainer.callbacks.command={RUNS['command']}"],
        ["--data", "os.system", "--data.command", RUNS["command"]],
        ["--model", "this.Zen"],
        ["--model.help", "this.Zen"],
    ],
    ids=["network class_path", "network inline", "callbacks inline", "callbacks append", "data", "model", "help"],
)
def test_the_same_class_paths_on_the_command_line_are_refused_before_anything_runs(args, capsys):
    before = snapshot()
    refusal(capsys, lambda: fit(*args))
    assert_nothing_ran(before)


def test_a_file_a_value_names_is_judged_as_a_config_file_is(capsys):
    Path("network.yaml").write_text(yaml.safe_dump(spec("os.system", RUNS)))
    before = snapshot()
    error = refusal(capsys, lambda: fit("--model.network", "network.yaml"))
    assert "os.system: a function, not a class" in error
    assert_nothing_ran(before)


def test_classes_of_the_expected_base_still_run_from_a_config(capsys):
    # The judge reads sources without importing, and follows what a package's __init__ re-exports.
    config = {
        "model": {"network": spec("tiny_networks.Hidden")},
        "trainer": {"callbacks": [spec("lightning.pytorch.callbacks.ModelSummary")], "max_epochs": 1},
        "optimizer": spec("torch.optim.SGD", {"lr": 0.1}),
    }
    Path("fine.yaml").write_text(yaml.safe_dump(config))
    fit("--config", "fine.yaml", "--trainer.limit_train_batches=2", "--trainer.limit_val_batches=1")
    assert any(Path("runs").rglob("last.ckpt"))
