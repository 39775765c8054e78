"""Seven kinds of LightningModule that nobody wrote for this template, each as Lightning's docs write its kind, beside
a small LightningDataModule of generated data (seeded, offline, a few seconds a fit on a CPU). The template's
machinery must drive them by class path alone: `--model kinds.gan.GAN --data kinds.gan.MixtureData`.

- gan: GAN, MixtureData: manual optimization, two optimizers, a training_step that returns nothing, no validation_step;
- segmentation: Segmenter, ShapesData: a class per pixel of 16x16 images, IoU by torchmetrics;
- vae: VAE, BlobsData: 8x8 blobs, batches of images alone, a forward that samples;
- contrastive: Contrastive, ClustersData: SimCLR's NT-Xent on two augmented views in dict batches, Lightning's
  default predict_step;
- plateau: PlateauRegressor, RegressionData: ReduceLROnPlateau stepped on val_loss;
- dict_batch: DictBatchClassifier, DictData: {"features", "label"} batches;
- two_inputs: TwoInputModel, TokensData: forward(tokens, numbers), a tuple example_input_array.

Each module's file is its own, as a user's would be: nothing is shared between them, nothing of the template imported.
"""
