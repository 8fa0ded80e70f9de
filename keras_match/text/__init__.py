"""Text: tokenization, vocabularies and word vectors, and the pair features computed from the texts.

| module | what it holds |
| --- | --- |
| `keras_match.text.tokenizer` | `tokenize`: the GloVe (Penn Treebank) tokenization rule, in TensorFlow ops |
| `keras_match.text.vocabulary` | `TextEncoder`: token ids (padding 0, out of vocabulary 1) from a vocabulary file |
| `keras_match.text.wordpiece` | `WordPieceEncoder`: a pretrained encoder's WordPiece ids (`[CLS] pieces [SEP]`) |
| `keras_match.text.vectors` | word-vector files (finding, checking, downloading) and `load_embeddings` |
| `keras_match.text.features` | the word-overlap and BM25 pair features |

It re-exports the names of `keras_match.text.tokenizer` and `keras_match.text.vocabulary`, so
`keras_match.text.TextEncoder` reads as before.
"""

from keras_match import _lazy

__getattr__ = _lazy.attribute_getter(__name__, __path__)  # keras_match.PACKAGE.MODULE imports MODULE on first use

from keras_match.text import tokenizer as _tokenizer, vocabulary as _vocabulary
from keras_match.text.tokenizer import *  # noqa: F401,F403  (text.tokenize, text.TextEncoder ... read as before)
from keras_match.text.vectors import MISSING_VECTORS, load_embeddings  # noqa: F401
from keras_match.text.vocabulary import *  # noqa: F401,F403
from keras_match.text.wordpiece import WordPieceEncoder  # noqa: F401

__all__ = [*_tokenizer.__all__, *_vocabulary.__all__, "MISSING_VECTORS", "load_embeddings", "WordPieceEncoder"]
