"""The tiny task as a distributed run reads it: `TinyShards`, every split in the library's batches over this rank's
shard (lightning_runs.data.ShardSampler), training padded so that every rank steps equally often, evaluation and
prediction unpadded so that each point counts once. Lightning's own sampler pads evaluation shards with repeated
points: scores would then differ from one process's."""

from lightning_runs.data import ShardSampler, TensorBatches
from tiny_tasks import TinyBatches


class TinyShards(TinyBatches):
    """Its defaults make shards of unequal size: 270 points leave 33 for validation and 33 for testing, 17 and 16 a
    rank, which batches of 16 cut into 2 and 1: one rank has an extra batch."""

    def __init__(
        self,
        n: int = 270,
        features: int = 4,
        num_classes: int = 3,
        batch_size: int = 16,
        seed: int = 0,
        folds: int | None = None,
        fold: int = 0,
    ):
        super().__init__(n, features, num_classes, batch_size, seed, folds, fold)

    def _shard(self, *tensors) -> TensorBatches:
        rank, world = (self.trainer.global_rank, self.trainer.world_size) if self.trainer else (0, 1)
        sampler = ShardSampler(len(tensors[0]), shuffle=False, rank=rank, world_size=world)
        return TensorBatches(tensors, self.hparams.batch_size, sampler)

    def val_dataloader(self) -> TensorBatches:
        return self._shard(*self.splits["val"])

    def test_dataloader(self) -> TensorBatches:
        return self._shard(*self.splits["test"])

    def predict_dataloader(self) -> TensorBatches:
        return self._shard(self.splits["test"][0])  # the test points without their labels
