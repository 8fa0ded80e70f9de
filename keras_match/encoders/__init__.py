"""Input encoders: the part of every zoo model that turns token ids into per-token states (`InputEncoder`), the
word-vector encoder of the papers (`WordVectorEncoder`), and pretrained transformers (`TransformerEncoder` over a
pinned keras-hub backbone, `locate` for their files; keras-hub is imported only when one is made)."""

from keras_match.encoders.base import InputEncoder
from keras_match.encoders.base import LayerEncoder
from keras_match.encoders.base import builder_settings
from keras_match.encoders.base import encoder_settings
from keras_match.encoders.base import takes_input_encoder
from keras_match.encoders.pretrained import PRETRAINED
from keras_match.encoders.pretrained import PretrainedEncoder
from keras_match.encoders.pretrained import locate
from keras_match.encoders.transformer import TRANSFORMER_LAYER
from keras_match.encoders.transformer import TransformerEncoder
from keras_match.encoders.transformer import TransformerStates
from keras_match.encoders.transformer import tokenizer
from keras_match.encoders.word_vectors import EMBEDDING_LAYER
from keras_match.encoders.word_vectors import WordVectorEncoder
from keras_match.encoders.word_vectors import word_vectors
from keras_match.encoders.word_vectors import word_vectors_with

__all__ = ["InputEncoder", "LayerEncoder", "WordVectorEncoder", "takes_input_encoder", "builder_settings", "encoder_settings",
           "word_vectors", "word_vectors_with", "EMBEDDING_LAYER", "TransformerEncoder", "TransformerStates",
           "TRANSFORMER_LAYER", "tokenizer", "locate", "PRETRAINED", "PretrainedEncoder"]
