"""The seven kinds of module in kinds/, each in a plain Lightning Trainer, none of the template involved: what each
logs, what its stages return and that it exports. The template's own tests drive the same classes through its CLI;
these hold the modules themselves to their description, so a failure there is the machinery's."""

from dataclasses import dataclass

import lightning as L
import pytest
import torch

from kinds.contrastive import ClustersData, Contrastive
from kinds.dict_batch import DictBatchClassifier, DictData
from kinds.gan import GAN, MixtureData
from kinds.plateau import PlateauRegressor, RegressionData
from kinds.segmentation import Segmenter, ShapesData
from kinds.two_inputs import TokensData, TwoInputModel
from kinds.vae import VAE, BlobsData


@dataclass
class Kind:
    model: type[L.LightningModule]
    data: type[L.LightningDataModule]
    fitted: set[str]  # trainer.callback_metrics after fit: the last training step's scalars and validation's
    validated: set[str]  # the metrics trainer.validate returns; empty: no validation_step
    tested: set[str]  # the metrics trainer.test returns; empty: no test_step
    row: tuple[int, ...]  # the shape of each row that predict returns
    sampling: bool = False  # forward draws random numbers: equal shapes, not equal values


KINDS = {
    "gan": Kind(GAN, MixtureData, {"g_loss", "d_loss"}, validated=set(), tested=set(), row=(2,), sampling=True),
    "segmenter": Kind(
        Segmenter,
        ShapesData,
        {"train_loss", "val_loss", "val_iou"},
        validated={"val_loss", "val_iou"},
        tested={"test_loss", "test_iou"},
        row=(3, 16, 16),
    ),
    "vae": Kind(
        VAE,
        BlobsData,
        {"train_loss", "train_recon_loss", "train_kl", "val_loss", "val_recon_loss", "val_kl"},
        validated={"val_loss", "val_recon_loss", "val_kl"},
        tested=set(),
        row=(4,),
        sampling=True,
    ),
    "contrastive": Kind(
        Contrastive,
        ClustersData,
        {"train_loss", "train_acc_top1", "val_loss", "val_acc_top1"},
        validated={"val_loss", "val_acc_top1"},
        tested=set(),
        row=(32,),
    ),
    "plateau": Kind(
        PlateauRegressor,
        RegressionData,
        {"train_loss", "val_loss", "val_mae"},
        validated={"val_loss", "val_mae"},
        tested={"test_loss", "test_mae"},
        row=(),
    ),
    "dict_batch": Kind(
        DictBatchClassifier,
        DictData,
        {"train_loss", "train_acc", "val_loss", "val_acc"},
        validated={"val_loss", "val_acc"},
        tested={"test_loss", "test_acc"},
        row=(4,),
    ),
    "two_inputs": Kind(
        TwoInputModel,
        TokensData,
        {"train_loss", "val_loss", "val_acc"},
        validated={"val_loss", "val_acc"},
        tested={"test_loss", "test_acc"},
        row=(),
    ),
}


def plain_trainer() -> L.Trainer:
    return L.Trainer(
        max_epochs=2, accelerator="cpu", logger=False, enable_checkpointing=False, enable_progress_bar=False
    )


# The GAN's data has a validation split it never steps through, as the docs' MNIST GAN has: Lightning says so.
@pytest.mark.filterwarnings("ignore:You passed in a `val_dataloader` but have no `validation_step`")
@pytest.mark.parametrize("name", KINDS)
def test_each_kind_fits_validates_tests_and_predicts_in_a_plain_trainer(name):
    kind = KINDS[name]
    L.seed_everything(0)
    model, data = kind.model(), kind.data()
    trainer = plain_trainer()
    trainer.fit(model, datamodule=data)
    assert set(trainer.callback_metrics) == kind.fitted
    assert all(torch.isfinite(value) for value in trainer.callback_metrics.values())

    if kind.validated:
        assert set(trainer.validate(model, datamodule=data, verbose=False)[0]) == kind.validated
    if kind.tested:
        assert set(trainer.test(model, datamodule=data, verbose=False)[0]) == kind.tested

    predictions = trainer.predict(model, datamodule=data)  # one tensor a batch
    rows = len(data.predict_dataloader().dataset)
    assert torch.cat(predictions).shape == (rows, *kind.row)


def test_a_module_without_a_step_refuses_that_stage_in_a_plain_trainer():
    """The GAN has no validation_step and the VAE no test_step: Lightning itself refuses to run those stages."""
    model, data = GAN(), MixtureData()
    with pytest.raises(Exception, match="validation_step"):
        plain_trainer().validate(model, datamodule=data)
    with pytest.raises(Exception, match="test_step"):
        plain_trainer().test(VAE(), datamodule=BlobsData())


@pytest.mark.parametrize("name", KINDS)
def test_each_kind_exports_with_its_example_input_array(name):
    model = KINDS[name].model().eval()
    example = model.example_input_array
    inputs = example if isinstance(example, tuple) else (example,)  # a tuple is several positional inputs
    program = torch.export.export(model, inputs)
    with torch.no_grad():
        exported, eager = program.module()(*inputs), model(*inputs)
    assert exported.shape == eager.shape
    if not KINDS[name].sampling:
        torch.testing.assert_close(exported, eager)


def test_the_vae_and_the_gan_sample_anew_at_every_call():
    images, batch = torch.rand(3, 1, 8, 8), (torch.zeros(5, 2), torch.zeros(5, dtype=torch.long))
    vae, gan = VAE().eval(), GAN().eval()
    assert not torch.equal(vae(images), vae(images))
    assert gan.predict_step(batch, 0).shape == (5, 2)  # one point a row of the batch, whatever the batch holds
    assert not torch.equal(gan.predict_step(batch, 0), gan.predict_step(batch, 0))


@pytest.mark.parametrize("data", [kind.data for kind in KINDS.values()], ids=list(KINDS))
def test_each_datamodule_splits_by_its_seed(data):
    def first_validation_batch(seed: int):
        module = data(seed=seed, batch_size=8)
        module.setup("fit")
        batch = next(iter(module.val_dataloader()))
        parts = batch.values() if isinstance(batch, dict) else [batch] if isinstance(batch, torch.Tensor) else batch
        return torch.cat([part.flatten().float() for part in parts])

    torch.manual_seed(0)  # the contrastive views are drawn at random as the batch is read
    again = first_validation_batch(0)
    torch.manual_seed(0)
    assert torch.equal(first_validation_batch(0), again)
    torch.manual_seed(0)
    assert not torch.equal(first_validation_batch(1), again)
