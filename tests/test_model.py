"""The networks, the optimizer's parameter groups and the learning-rate curve."""

import math
from itertools import pairwise
from pathlib import Path

import pytest
import torch
from lightning import Trainer

from project.model import DigitsClassifier
from project.networks import MLP, DigitsCNN
from project.schedule import warmup_cosine

from helpers import refusal, run


@pytest.mark.parametrize("shape", [(8, 8), (28, 28), (1, 8, 8), (3, 32, 32), (5, 12, 20)])
def test_the_cnn_maps_images_of_any_size_and_channel_count_to_class_logits(shape):
    network = DigitsCNN(num_classes=10, input_shape=shape, channels=(8, 16), dropout=0.5)
    assert network(torch.randn(5, *shape)).shape == (5, 10)


def test_the_cnn_refuses_samples_that_are_not_images_in_one_line():
    with pytest.raises(ValueError, match=r"DigitsCNN takes images, \(H, W\) or \(C, H, W\) samples, not \(100,\)"):
        DigitsCNN(3, (100,))


@pytest.mark.parametrize("shape", [(8, 8), (13,), (2, 50), (3, 16, 16)])
def test_the_mlp_baseline_takes_its_input_size_from_the_sample_shape(shape):
    network = MLP(num_classes=3, input_shape=shape, hidden=(16, 8, 4), dropout=0.0)
    assert network(torch.randn(5, *shape)).shape == (5, 3)
    assert network.layers[1].in_features == math.prod(shape)
    assert [layer.out_features for layer in network.layers if isinstance(layer, torch.nn.Linear)] == [16, 8, 4, 3]


def test_the_classifier_trains_whichever_network_factory_it_is_given():
    model = DigitsClassifier(network=MLP, num_classes=4)
    assert isinstance(model.network, MLP) and model(torch.rand(2, 8, 8) * 16).shape == (2, 4)


def test_classifier_takes_raw_pixels_and_normalizes_them_with_its_buffers():
    model = DigitsClassifier().eval()
    model.input_mean.fill_(4.0)
    model.input_std.fill_(2.0)
    raw = torch.randint(0, 17, (3, 8, 8)).float()
    torch.testing.assert_close(model(raw), model.network((raw - 4.0) / 2.0))


def test_the_classifier_is_built_for_the_sample_shape_with_a_statistic_per_input_value():
    model = DigitsClassifier(network=MLP, num_classes=3, input_shape=(13,))
    assert model.input_mean.shape == model.input_std.shape == (13,)
    assert model.example_input_array.shape == (2, 13), "export and the model summary trace a batch of this shape"
    assert model(torch.randn(4, 13)).shape == (4, 3)


def optimizer_of(model: DigitsClassifier, steps: int = 100):
    trainer = Trainer(max_steps=steps, logger=False, enable_checkpointing=False, enable_progress_bar=False)
    model.trainer = trainer
    config = model.configure_optimizers()
    return config["optimizer"], config["lr_scheduler"]


def test_weights_of_convs_and_linears_decay_while_biases_and_norms_do_not():
    model = DigitsClassifier(weight_decay=0.1)
    optimizer, _ = optimizer_of(model)
    names = {id(p): name for name, p in model.network.named_parameters()}
    groups = {g["name"]: ({names[id(p)] for p in g["params"]}, g["weight_decay"]) for g in optimizer.param_groups}
    decayed, decay_value = groups["decay"]
    kept, keep_value = groups["no_decay"]
    assert decayed == {"features.0.weight", "features.4.weight", "head.1.weight"}
    assert kept == {
        "features.0.bias", "features.1.weight", "features.1.bias",
        "features.4.bias", "features.5.weight", "features.5.bias", "head.1.bias",
    }  # fmt: skip
    assert (decay_value, keep_value) == (0.1, 0.0)


def lr_curve(total: int, warmup: int, lr: float, min_lr: float) -> list[float]:
    optimizer = torch.optim.SGD([torch.nn.Parameter(torch.zeros(1))], lr=lr)
    scheduler = warmup_cosine(optimizer, total, warmup, min_lr)
    curve = []
    for _ in range(total):
        curve.append(optimizer.param_groups[0]["lr"])
        optimizer.step()
        scheduler.step()
    return [*curve, optimizer.param_groups[0]["lr"]]  # the LR after the final step too


@pytest.mark.parametrize("total,warmup", [(690, 69), (100, 1), (50, 0)])
def test_lr_warms_up_linearly_then_follows_a_cosine_down_to_min_lr(total, warmup):
    lr, min_lr = 1e-2, 1e-5
    curve = lr_curve(total, warmup, lr, min_lr)
    assert curve[0] <= 0.01 * lr + 1e-12
    peak = max(1, warmup)
    assert curve[peak] == pytest.approx(lr)
    assert all(a < b for a, b in pairwise(curve[: peak + 1])), "warmup rises"
    assert all(a >= b - 1e-12 for a, b in pairwise(curve[peak:])), "monotone after warmup"
    assert curve[-1] == pytest.approx(min_lr, abs=1e-9)
    middle = peak + (total - peak) // 2
    assert curve[middle] == pytest.approx(min_lr + (lr - min_lr) * 0.5 * (1 + math.cos(math.pi * 0.5)), rel=0.05)


def test_schedule_length_comes_from_the_trainer_so_the_curve_always_completes():
    model = DigitsClassifier(warmup_fraction=0.25)
    _, config = optimizer_of(model, steps=40)
    assert config["interval"] == "step"
    scheduler = config["scheduler"]
    assert scheduler._milestones == [10]  # 25% of the trainer's 40 steps


def test_a_network_that_does_not_take_the_sample_shape_is_one_line_and_no_run_folder(capsys):
    error = refusal(capsys, lambda: run("fit", "--model.network=helpers.OnlyClasses", "--trainer.max_epochs=1"))
    assert error.startswith("error: --model.network: its __init__ must take the class count and one sample's shape")
    assert "(num_classes, input_shape, ...); OnlyClasses.__init__() takes" in error and not Path("runs").exists()
