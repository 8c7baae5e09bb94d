"""Datasets (decoded once into tensors), partitioners, tensor-side augmentation."""
from .array_dataset import ArrayDataset, DATASETS, load_dataset
from .partition import PARTITIONERS, Partition, make_partition, parse_partition

__all__ = [
    "ArrayDataset",
    "DATASETS",
    "load_dataset",
    "PARTITIONERS",
    "Partition",
    "make_partition",
    "parse_partition",
]
