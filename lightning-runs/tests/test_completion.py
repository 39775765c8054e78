"""`python -m <package> completion`: a bash script with which the shell completes the subcommands, the tools and each
subcommand's options, the default model's and data's arguments among them, and file names after --config."""

import shutil
import subprocess

import pytest

import lightning_runs
from tiny_tasks import cli_main

pytestmark = pytest.mark.skipif(shutil.which("bash") is None, reason="needs bash to complete in")


@pytest.fixture(scope="module")
def script(tmp_path_factory):
    path = tmp_path_factory.mktemp("completion") / "tiny.bash"
    lightning_runs.main(cli_main, "tiny_tasks", ["completion", "--output", str(path)])
    return path


def completed(script, *words: str, cwd=None) -> list[str]:
    """What bash offers for the last of `words` (the command named after the package first), as a user's TAB."""
    words_array = " ".join(f"'{w}'" for w in ["tiny_tasks", *words])
    line = f"source {script}; COMP_WORDS=({words_array}); COMP_CWORD={len(words)}; _shtab_tiny_tasks; "
    out = subprocess.run(["bash", "-c", line + 'printf "%s\\n" "${COMPREPLY[@]}"'], capture_output=True, text=True,
                         cwd=cwd, check=True)  # fmt: skip
    assert out.stderr == ""
    return [word for word in out.stdout.splitlines() if word]


def test_the_subcommands_and_the_tools_complete(script):
    assert completed(script, "") == ["fit", "validate", "test", "predict", *lightning_runs.TOOLS]
    assert completed(script, "te") == ["test"]


def test_each_option_of_a_subcommand_completes_those_of_the_default_model_and_data_too(script):
    assert completed(script, "fit", "--trainer.max_e") == ["--trainer.max_epochs"]
    assert "--model.lr" in completed(script, "fit", "--trainer.max_epochs", "3", "--model.")
    assert "--data.batch_size" in completed(script, "test", "--data.b")


def test_a_config_or_checkpoint_completes_as_a_file_name(script, tmp_path):
    (tmp_path / "recipe.yaml").touch()
    assert completed(script, "fit", "--config", "rec", cwd=tmp_path) == ["recipe.yaml"]
