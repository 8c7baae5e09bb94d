"""Model registry: name -> factory(input_shape, num_classes, **kw) -> nn.Module."""
from .model_registry import MODELS, build_model, count_parameters

__all__ = ["MODELS", "build_model", "count_parameters"]
