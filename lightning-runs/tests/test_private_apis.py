"""Each private API the library relies on (lightning_runs/private.py lists them) still behaves as the library reads
it: one test per item, each failing when the library under it changes."""

import contextlib
import importlib.util
import logging
import re
import signal
import subprocess
import sys

import lightning as L
import pytest
import torch
from jsonargparse import ActionConfigFile, ActionYesNo, ArgumentError, ArgumentParser, DefaultHelpFormatter, Namespace
from lightning.fabric.utilities.data import _set_sampler_epoch
from lightning.fabric.utilities.logger import _convert_params, _flatten_dict
from lightning.pytorch import LightningDataModule
from lightning.pytorch.callbacks import Callback, ModelCheckpoint
from lightning.pytorch.demos.boring_classes import BoringModel, RandomDataset
from lightning.pytorch.loggers import CSVLogger, TensorBoardLogger
from lightning.pytorch.loggers.csv_logs import ExperimentWriter
from lightning.pytorch.loggers.mlflow import _MLFLOW_AVAILABLE
from lightning.pytorch.loggers.wandb import _WANDB_AVAILABLE
from lightning.pytorch.utilities import rank_zero_info
from torch.utils.data import DataLoader, DistributedSampler
from torchdata.stateful_dataloader import StatefulDataLoader

from lightning_runs.checkpoints import LastCheckpoint
from lightning_runs.cli.help import RunsHelpFormatter
from lightning_runs.console import RANK_ZERO_LOGGERS
from lightning_runs.private import (
    call_epoch_start_hooks,
    continue_persistent_workers,
    continue_version,
    datamodules_described_plainly,
    given_options,
    lightning_modules_traceable,
    load_loader_states,
    option_nargs,
    parsed_unchecked,
    print_config_deferred,
    print_config_if_requested,
    save_now,
    saved_class_path,
    set_config_dump,
    signal_launched_ranks,
    skip_batches,
    steps_between_saves,
    subcommand_parser,
    tensorboard_file_writer,
    trial_id,
    typed_options,
    unnumbered_logger,
    wrap_distributed_sampler,
)
from tiny_tasks import TinyClassifier, TinyDataModule


@pytest.fixture(scope="module")
def saved(finished_two_epochs) -> dict:
    """The last checkpoint of a 2-epoch fit of the tiny task (conftest's), as the library reads one."""
    return torch.load(finished_two_epochs / "tiny/version_0/checkpoints/last.ckpt", weights_only=True)


def test_lightningcli_records_the_class_of_each_module_it_built(saved):
    assert saved_class_path(saved["datamodule_hyper_parameters"]) == "tiny_tasks.TinyDataModule"
    assert saved_class_path(saved["hyper_parameters"]) == "tiny_tasks.TinyClassifier", "--model is chosen by class path"
    assert saved["hyper_parameters"]["_instantiator"] == "lightning.pytorch.cli.instantiate_module"


def test_the_fit_loop_has_processed_but_not_completed_an_epoch_while_its_end_hooks_save(tmp_path):
    """What schedulers_after_epoch (checkpoints/last_checkpoint.py) reads: between an epoch's last batch and its
    ReduceLROnPlateau step, the epoch is processed and not completed, and a resume replays its end `restarting`."""
    seen = []

    class Watch(Callback):
        def on_train_epoch_end(self, trainer, pl_module) -> None:
            progress = trainer.fit_loop.epoch_progress.current
            seen.append((progress.processed, progress.completed, trainer.fit_loop.restarting))

    quiet = {"logger": False, "enable_checkpointing": False, "enable_progress_bar": False}
    L.Trainer(max_epochs=2, limit_train_batches=2, limit_val_batches=0, callbacks=[Watch()], **quiet).fit(BoringModel())
    assert seen == [(1, 0, False), (2, 1, False)]


class StatefulLoader(DataLoader):  # as the template's TensorBatches: where an epoch stands
    def state_dict(self) -> dict:
        return {"position": 1}

    def load_state_dict(self, state: dict) -> None: ...


def test_a_checkpoint_keeps_the_training_loaders_states_where_fsdp_reads_them(tmp_path):
    quiet = {"enable_checkpointing": False, "enable_progress_bar": False, "enable_model_summary": False}
    trainer = L.Trainer(max_epochs=1, limit_train_batches=2, limit_val_batches=0, logger=False, **quiet)
    model = BoringModel()
    model.train_dataloader = lambda: StatefulLoader(RandomDataset(32, 8), batch_size=2)
    trainer.fit(model)
    trainer.save_checkpoint(tmp_path / "saved.ckpt")
    saved = torch.load(tmp_path / "saved.ckpt", weights_only=True)
    assert saved["loops"]["fit_loop"]["state_dict"]["combined_loader"] == [{"position": 1}]


def test_a_model_checkpoint_names_its_step_interval_and_saves_when_told_once_a_step(tmp_path):
    checkpoint = ModelCheckpoint(dirpath=tmp_path, filename="kept", every_n_train_steps=100)
    assert steps_between_saves(checkpoint) == 100 and steps_between_saves(ModelCheckpoint()) == 0

    class SaveAtTheEnd(Callback):
        def on_train_end(self, trainer, pl_module) -> None:
            for _ in range(2):  # the second: already saved at this step, nothing more
                save_now(checkpoint, trainer)

    quiet = {"logger": False, "enable_progress_bar": False, "enable_model_summary": False}
    trainer = L.Trainer(max_steps=3, limit_val_batches=0, callbacks=[checkpoint, SaveAtTheEnd()], **quiet)
    trainer.fit(BoringModel())
    assert [p.name for p in tmp_path.iterdir()] == ["kept.ckpt"] and checkpoint.best_model_path.endswith("kept.ckpt")
    assert torch.load(tmp_path / "kept.ckpt", weights_only=True)["global_step"] == 3


def test_lightnings_launcher_passes_a_signal_on_to_the_ranks_it_started():
    trainer = L.Trainer(accelerator="cpu", devices=2, strategy="ddp", logger=False, enable_checkpointing=False)
    rank = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        trainer.strategy.launcher.procs = [rank]  # as its launch() records the processes it starts
        signal_launched_ranks(trainer.strategy.launcher, signal.SIGTERM)
        assert rank.wait(timeout=10) == -signal.SIGTERM
    finally:
        rank.kill()
    signal_launched_ranks(None, signal.SIGTERM)  # a single process, or ranks started by torchrun: nothing to do


def test_lightnings_info_lines_are_records_of_the_loggers_console_filters(caplog):
    caplog.set_level(logging.INFO, logger="lightning.pytorch")  # as apply_quiet leaves it without --quiet
    seen = []

    def drop(record: logging.LogRecord) -> bool:
        seen.append(record.getMessage())
        return False

    loggers = [logging.getLogger(name) for name in RANK_ZERO_LOGGERS]
    for logger in loggers:
        logger.addFilter(drop)
    try:
        rank_zero_info("a line of Lightning's")
    finally:
        for logger in loggers:
            logger.removeFilter(drop)
    assert seen == ["a line of Lightning's"]


def test_argparse_keeps_every_option_string_of_a_parser():
    parser = ArgumentParser()
    parser.add_class_arguments(TinyDataModule, "data")
    nargs = option_nargs(parser)
    assert {"-h", "--help", "--data.batch_size", "--data.seed"} <= set(nargs)
    assert nargs["--help"] == 0 and nargs["--data.batch_size"] != 0, "a flag takes no value, an option one"


def test_jsonargparse_ends_a_class_typed_options_help_with_every_imported_subclass(monkeypatch):
    """What RunsHelpFormatter._get_help_string shortens: argparse asks it for the text after each option, and
    jsonargparse's ends with the subclasses, `known subclasses: a, b, ...)`."""
    monkeypatch.setenv("COLUMNS", "100000")  # one line per option
    texts = {}
    for formatter in (DefaultHelpFormatter, RunsHelpFormatter):
        parser = ArgumentParser(formatter_class=formatter)
        parser.add_argument("--network", type=torch.nn.Module)
        lines = parser.format_help().splitlines()
        texts[formatter] = next(line for line in lines if line.startswith("  --network NETWORK"))
    listed = r"\(type: <class 'Module'>, default: null, known subclasses: torch.nn.Module, torch.nn.\w+"
    assert re.search(listed, texts[DefaultHelpFormatter])
    assert texts[DefaultHelpFormatter].endswith(")") and "torch.nn.Identity" in texts[DefaultHelpFormatter]
    assert re.search(r"default: null, \d+ known subclasses\)$", texts[RunsHelpFormatter])


def test_jsonargparse_prints_a_config_once_asked_after_parses_that_deferred_it(capsys):
    parser = ArgumentParser(exit_on_error=False)
    parser.add_argument("--config", action=ActionConfigFile)
    parser.add_argument("--lr", type=float, default=0.1)
    with print_config_deferred():
        first = parser.parse_args(["--lr", "0.5", "--print_config"])
        second = parser.parse_args(["--lr", "0.5", "--print_config"])
    assert capsys.readouterr().out == "", "nothing printed inside"
    with pytest.raises(SystemExit):
        print_config_if_requested(parser, second)
    assert capsys.readouterr().out == "lr: 0.5\n" and first.lr == 0.5


def test_jsonargparse_keeps_each_options_type_hint_and_each_subcommands_parser():
    parser = ArgumentParser()
    parser.add_class_arguments(TinyDataModule, "data", sub_configs=True)
    parser.add_argument("--quiet", action=ActionYesNo, default=False)
    parser.link_arguments("data.n", "data.seed")  # a link target: not a key a config sets
    options = {key: (hint, default, group) for key, hint, default, _, group in typed_options(parser)}
    assert options["data"] == (None, None, True) and options["quiet"] == (bool, False, False)
    assert options["data.batch_size"] == (int, 32, False) and "data.seed" not in options
    main = ArgumentParser()
    main.add_subcommands().add_subcommand("fit", parser)
    assert subcommand_parser(main, "fit") is parser


def test_a_model_checkpoints_state_holds_the_paths_run_checkpoint_respells(tmp_path):
    state = ModelCheckpoint(dirpath=tmp_path).state_dict()
    assert {"dirpath", "best_k_models", *LastCheckpoint.PATHS} <= set(state)
    assert state["dirpath"] == str(tmp_path.resolve())


def test_the_last_kept_score_is_saved_by_lightning_and_loaded_back_only_by_run_checkpoint(tmp_path):
    saved = {**ModelCheckpoint(dirpath=tmp_path).state_dict(), "current_score": torch.tensor(0.5)}
    plain, ours = ModelCheckpoint(dirpath=tmp_path), LastCheckpoint(dirpath=tmp_path)
    plain.load_state_dict(saved)
    ours.load_state_dict(saved)
    assert plain.current_score is None, "Lightning loads it now: LastCheckpoint's restore can go"
    assert ours.current_score == 0.5, "a resumed run ends with the uninterrupted one's callback state"


def test_the_csv_writer_checks_its_folder_through_the_hook_loggers_py_overrides(tmp_path):
    (tmp_path / "metrics.csv").write_text("step,train/loss\n0,1.0\n")
    checked = []

    class Keeping(ExperimentWriter):
        def _check_log_dir_exists(self) -> None:
            checked.append(self._fs.isfile(self.metrics_file_path))

    Keeping(log_dir=str(tmp_path))
    assert checked == [True] and (tmp_path / "metrics.csv").read_text().endswith("0,1.0\n")
    logger = CSVLogger(tmp_path)
    assert logger._experiment is None and logger.experiment is logger._experiment, "built once, kept there"


def test_parameters_are_named_as_mlflow_logger_names_them_and_the_extras_are_detected():
    assert _flatten_dict(_convert_params(Namespace(model=Namespace(lr=0.1, network={"width": 8})))) == {
        "model/lr": 0.1,
        "model/network/width": 8,
    }
    assert bool(_MLFLOW_AVAILABLE) == (importlib.util.find_spec("mlflow") is not None)
    assert bool(_WANDB_AVAILABLE) == (importlib.util.find_spec("wandb") is not None)


def test_a_summary_writers_file_writer_takes_a_ready_summary(tmp_path):
    from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    from tensorboard.plugins.hparams import metadata
    from tensorboard.plugins.hparams import summary_v2 as hparams_api
    from torch.utils.tensorboard import SummaryWriter

    writer = SummaryWriter(tmp_path)
    tensorboard_file_writer(writer).add_summary(hparams_api.hparams_pb({"fused": True}), 0)
    writer.close()
    events = EventAccumulator(str(tmp_path))
    events.Reload()
    content = events.PluginTagToContent(metadata.PLUGIN_NAME)[metadata.SESSION_START_INFO_TAG]
    assert metadata.parse_session_start_info_plugin_data(content).hparams["fused"].bool_value is True


def test_mlflow_logger_keeps_the_settings_loggers_py_sets_before_it_opens_a_store(monkeypatch):
    pytest.importorskip("mlflow")
    from lightning.pytorch.loggers import MLFlowLogger
    from mlflow.tracking import MlflowClient

    monkeypatch.setenv("MLFLOW_DISABLE_TELEMETRY", "true")
    logger = MLFlowLogger("tiny", tracking_uri="http://never-contacted.invalid", artifact_location="art", run_id="r1")
    assert (logger._experiment_name, logger._artifact_location, logger._run_id) == ("tiny", "art", "r1")
    assert logger._initialized is False and isinstance(logger._mlflow_client, MlflowClient)
    # The client is what `experiment` returns once the run is open; report.py reads the store back from it.
    assert logger._tracking_uri == logger._mlflow_client.tracking_uri == "http://never-contacted.invalid"


def test_wandb_logger_opens_its_run_with_the_init_arguments_loggers_py_edits(tmp_path, monkeypatch):
    wandb = pytest.importorskip("wandb")
    from lightning.pytorch.loggers import WandbLogger

    logger = WandbLogger(name="version_0", save_dir=str(tmp_path), mode="offline")
    assert "anonymous" in logger._wandb_init and logger._experiment is None
    logger._wandb_init["id"] = "stored-id"  # the id of the run to continue, from the run folder
    opened, run = {}, object()
    monkeypatch.setattr(wandb, "run", None)
    monkeypatch.setattr(wandb, "init", lambda **settings: opened.update(settings) or run)
    assert logger.experiment is run is logger._experiment
    assert opened["id"] == "stored-id" and opened["mode"] == "offline"


def test_an_optuna_trial_is_rebuilt_in_another_process_from_its_storage_id(tmp_path):
    optuna = pytest.importorskip("optuna")
    storage = f"sqlite:///{tmp_path / 'study.db'}"
    study = optuna.create_study(storage=storage, study_name="s")
    study.ask()
    asked = study.ask()
    again = optuna.trial.Trial(optuna.load_study(study_name="s", storage=storage), trial_id(asked))
    again.report(0.5, step=1)
    assert again.number == asked.number == 1
    assert study.trials[1].intermediate_values == {1: 0.5}


def test_a_lightning_module_outside_a_trainer_is_traced_while_its_trainer_answers_none():
    model = BoringModel().eval()
    with pytest.raises(RuntimeError, match="is not attached to a `Trainer`"):
        _ = model.trainer
    with lightning_modules_traceable():
        assert model.trainer is None
        traced = torch.jit.trace(model, torch.zeros(2, 32))
    torch.testing.assert_close(traced(torch.ones(5, 32)), model(torch.ones(5, 32)))
    with pytest.raises(RuntimeError):
        _ = model.trainer


def test_runs_cli_overrides_only_public_lightningcli_hooks():
    """Hooks such as `_run_subcommand` change without notice; RunsCLI uses the documented ones (init_parser,
    add_arguments_to_parser, parse_arguments, before_instantiate_classes, instantiate_trainer, after_fit, ...)."""
    from lightning.pytorch.cli import LightningCLI

    from lightning_runs.cli.runs_cli import RunsCLI

    overridden = [name for name in vars(RunsCLI) if callable(getattr(LightningCLI, name, None))]
    assert "_parse_ckpt_path" not in overridden and "_run_subcommand" not in overridden
    assert overridden and [name for name in overridden if name.startswith("_") and name != "__init__"] == []


def test_a_sharded_checkpoints_unsharded_part_is_named_as_lightning_names_it():
    from lightning.fabric.utilities.load import _METADATA_FILENAME

    from lightning_runs.checkpoints.sharded import METADATA

    assert METADATA == _METADATA_FILENAME  # Lightning's ModelParallelStrategy.load_checkpoint reads this file


def test_torch_export_logs_each_guard_it_adds_with_the_line_that_added_it():
    """export/exporting.py names the line of a forward that pins the batch (`n = len(x)`): torch says which guard it
    added, and where, only in symbolic_shapes' "[guard added]" INFO record."""
    from lightning_runs.private import guards_added

    class PinsTheBatch(torch.nn.Module):
        def forward(self, x):
            n = len(x)  # a Python int of the batch: export makes it a constant
            return x.reshape(n, -1)

    batch = torch.export.Dim("batch", min=2)
    # The pin is refused by export itself; the guard is logged before.
    with guards_added() as guards, contextlib.suppress(Exception):
        torch.export.export(PinsTheBatch(), (torch.zeros(3, 4),), dynamic_shapes=({0: batch},))
    lines = [frame.line for _, frame in guards if frame is not None]
    assert any("len(x)" in (line or "") for line in lines), guards


def boring_fit(tmp_path, callbacks=(), logger=False, model=None, **fit) -> L.Trainer:
    trainer = L.Trainer(
        max_epochs=1, limit_train_batches=2, limit_val_batches=0, logger=logger, default_root_dir=tmp_path,
        callbacks=list(callbacks), enable_progress_bar=False, enable_model_summary=False, accelerator="cpu",
    )  # fmt: skip
    trainer.fit(model or BoringModel(), **fit)
    return trainer


def test_the_epoch_start_hooks_are_called_as_the_fit_loop_calls_them_and_the_module_hook_is_found_on_the_instance(
    tmp_path,
):
    calls = []

    class Replays(Callback):
        def on_train_start(self, trainer, pl_module) -> None:
            call_epoch_start_hooks(trainer)

        def on_train_epoch_start(self, trainer, pl_module) -> None:
            calls.append(("callback", pl_module._current_fx_name))

    class Logs(BoringModel):
        def on_train_epoch_start(self) -> None:
            self.log("at_start", 1.0)  # allowed only where the hook is named as Lightning names it
            calls.append(("module", self._current_fx_name))

    model = Logs()
    model.on_train_start = lambda: calls.append(("instance", None))  # RandomState's one-shot wrappers sit there
    boring_fit(tmp_path, [Replays()], model=model)
    replayed = [("callback", "on_train_epoch_start"), ("module", "on_train_epoch_start")]
    assert calls == [*replayed, ("instance", None), *replayed]


def test_ckpt_path_last_asks_each_model_checkpoint_before_set_up_and_a_numbering_logger_keeps_a_version_given_late(
    tmp_path,
):
    first = boring_fit(tmp_path, [LastCheckpoint(filename="last")], logger=TensorBoardLogger(tmp_path, name="x"))
    assert first.log_dir == str(tmp_path / "x/version_0")
    asked = []

    class Asked(LastCheckpoint):
        def _find_last_checkpoints(self, trainer) -> set[str]:
            asked.append(self.dirpath)  # None: before set-up, which sets it from the logger's version
            return super()._find_last_checkpoints(trainer)

    fresh = TensorBoardLogger(tmp_path, name="x")
    assert unnumbered_logger(L.Trainer(logger=fresh)) is fresh
    again = boring_fit(tmp_path, [Asked(filename="last")], logger=fresh, ckpt_path="last")
    assert asked == [None] and again.ckpt_path == str(tmp_path / "x/version_0/checkpoints/last.ckpt")
    assert again.log_dir == first.log_dir and not (tmp_path / "x/version_1").exists()
    numbered = CSVLogger(tmp_path, name="y")
    continue_version(numbered, 3)
    assert numbered.version == 3 and numbered.log_dir == str(tmp_path / "y/version_3")
    assert unnumbered_logger(L.Trainer(logger=numbered)) is None


def test_a_datamodules_str_builds_its_loaders_unless_described_plainly():
    built = []

    class Counted(LightningDataModule):
        def train_dataloader(self):
            built.append("train")
            return DataLoader(range(4))

    str(Counted())
    assert built == ["train"]  # what jsonargparse's eager debug line of a missing link source cost
    with datamodules_described_plainly():
        assert "Counted object" in str(Counted())
    assert built == ["train"] and "Train dataloader" in str(Counted())


def test_the_training_iterator_exists_at_train_start_and_skipping_takes_batches_without_counting_them(tmp_path):
    seen = []

    class Skips(Callback):
        def on_train_start(self, trainer, pl_module) -> None:
            skip_batches(trainer, 1)

        def on_train_batch_start(self, trainer, pl_module, batch, batch_idx) -> None:
            seen.append((batch_idx, batch.sum().item()))

    model = BoringModel()
    model.train_dataloader = lambda: DataLoader(torch.arange(3.0).repeat_interleave(32).view(3, 32))
    boring_fit(tmp_path, [Skips()], model=model, ckpt_path=None)
    assert seen == [(0, 32.0), (1, 64.0)]  # batch 0 skipped; the epoch's two limited batches are 1 and 2


def test_a_parse_without_defaults_holds_only_what_was_given_and_needs_no_required_option(tmp_path):
    parser = ArgumentParser()
    parser.add_argument("--config", action=ActionConfigFile)
    parser.add_argument("--model", required=True)
    parser.add_argument("--classes", type=int, default=10)
    parser.add_argument("--shape", type=int, default=8)
    (tmp_path / "c.yaml").write_text("shape: 8\n")
    with pytest.raises(SystemExit):  # the public parse checks the required option
        parser.parse_args(["--classes=10"], defaults=False)
    given = given_options(parser, ["--classes=10", f"--config={tmp_path / 'c.yaml'}"])
    assert given.get("classes") == 10 and given.get("shape") == 8 and given.get("model") is None
    assert "classes" not in given_options(parser, [])


def test_a_fit_loop_keeps_a_checkpoints_loader_states_pending_until_it_loads_them_while_restarting():
    loop = L.Trainer(logger=False, enable_progress_bar=False).fit_loop
    loop.on_load_checkpoint({"combined_loader": [{"position": 3}]})  # what restore_training_state hands it
    assert loop._combined_loader_states_to_load == [{"position": 3}]
    load_loader_states(loop.trainer)  # not restarting, no loader built: nothing to do, nothing lost
    assert loop._combined_loader_states_to_load == [{"position": 3}] and hasattr(loop, "_data_fetcher")
    load_loader_states(loop.trainer, [{"position": 5}])  # a rank's own states (test_ddp_loaders.py), kept the same way
    assert loop._combined_loader_states_to_load == [{"position": 5}]
    load_loader_states(loop.trainer, [])  # none: an epoch's last batch saved before it ended (test_exact_restarts.py)
    assert loop._combined_loader_states_to_load == []
    assert callable(loop._load_combined_loader_states)  # test_exact_restarts' sized schedule: the load, done
    sampler = DistributedSampler(range(4), num_replicas=2, rank=0)
    _set_sampler_epoch(StatefulDataLoader(range(4), sampler=sampler), 3)  # what the resumed epoch is shuffled by
    assert sampler.epoch == 3


def test_a_fit_loop_resumed_from_an_epochs_end_is_not_restarting_and_leaves_its_loaders_states_pending(tmp_path):
    """What continue_persistent_workers reads: from an epoch's end the fit loop hands its loaders no state, and makes
    the next epoch's iterator from its fetcher."""
    seen = []

    class Continue(Callback):
        def on_train_start(self, trainer, pl_module) -> None:
            loop = trainer.fit_loop
            seen.append((loop.restarting, loop._combined_loader_states_to_load, continue_persistent_workers(trainer)))

    model = BoringModel()
    data = RandomDataset(32, 8)
    model.train_dataloader = lambda: StatefulLoader(data, batch_size=2, num_workers=1, persistent_workers=True)
    quiet = {"logger": False, "enable_checkpointing": False, "enable_progress_bar": False, "limit_val_batches": 0}
    trainer = L.Trainer(max_epochs=1, limit_train_batches=2, enable_model_summary=False, **quiet)
    trainer.fit(model)
    trainer.save_checkpoint(tmp_path / "end.ckpt")
    resumed = L.Trainer(max_epochs=2, limit_train_batches=2, callbacks=[Continue()], **quiet)
    resumed.fit(model, ckpt_path=tmp_path / "end.ckpt")
    assert seen == [(False, [{"position": 1}], True)] and resumed.global_step == 4


def test_lightningcli_saves_its_modules_hyperparameters_from_the_config_dump_it_is_given():
    """RunsCLI hands LightningCLI config.yaml's dump (`config_dump`) rather than have it dump the config again."""
    from lightning.pytorch.cli import LightningCLI

    cli = LightningCLI(TinyClassifier, run=False, args=[], save_config_callback=None)
    set_config_dump(cli, {"model": {"lr": 0.125}})
    cli.instantiate_classes()
    assert cli.model.hparams.lr == 0.125 and "num_classes" not in cli.model.hparams  # built with lr 0.05, 3 classes


def test_a_parse_unchecked_leaves_out_only_the_validation_at_its_end():
    parser = ArgumentParser(exit_on_error=False)
    parser.add_argument("--model", required=True)
    parser.add_argument("--classes", type=int, default=10)
    with pytest.raises(ArgumentError):  # the public parse validates the whole config: the required option is missing
        parser.parse_args(["--classes=3"])
    assert parsed_unchecked(parser, ["--classes=3"]).classes == 3
    with pytest.raises(ArgumentError):  # a value is still checked as it is read
        parsed_unchecked(parser, ["--classes=x", "--model=m"])


def test_lightnings_ddp_wrapper_lists_the_sampler_it_wraps_again_at_each_epochs_start():
    # torchdata's RandomSampler is not torch's: Lightning wraps it, and each epoch's order comes from its generator.
    from lightning.fabric.utilities.distributed import DistributedSamplerWrapper
    from torchdata.stateful_dataloader.sampler import RandomSampler

    listed = []

    class Listed:
        def __init__(self, sampler, wrapper) -> None:
            self.sampler, self.wrapper = sampler, wrapper

        def __len__(self) -> int:
            return len(self.sampler)

        def __iter__(self):
            listed.append(self.wrapper.epoch)
            return iter(self.sampler)

    wrapper = DistributedSamplerWrapper(RandomSampler(range(8)), num_replicas=2, rank=0)
    loader = StatefulDataLoader(range(8), batch_sampler=torch.utils.data.BatchSampler(wrapper, 2, False))
    assert isinstance(wrap_distributed_sampler(loader, Listed), Listed)
    for epoch in (0, 1):
        wrapper.set_epoch(epoch)
        assert len(list(wrapper)) == 4
    assert listed == [0, 1]
    assert wrap_distributed_sampler(StatefulDataLoader(range(8)), Listed) is None  # no wrapper: nothing wrapped
