"""The encoder rankers: a pretrained transformer as the whole matching model, the references every
transformer-input entry of the zoo is measured against (issue 57).

- the **bi-encoder** (`build_bi_encoder`, Reimers & Gurevych 2019): the question and the answer each through the
  same encoder, `SentenceEmbedding` (masked mean of the states, L2-normalised), `SiameseFeatures` (their cosine
  for ranking, `[u; v; |u - v|]` for classification), the shared head starting at the cosine, so that the
  untrained model is the zero-shot sentence-transformers ranker;
- the **cross-encoder** (`build_cross_encoder`, Nogueira & Cho 2019): the pair packed in the model as
  `[CLS] question [SEP] answer [SEP]` with segment ids 0 / 1 (`pack_pair`), read by the encoder's BERT backbone
  (`PackedPairTransformer`), the `[CLS]` state to the shared head.

Both read the pair preprocessor's WordPiece ids (`tokenizer` = the backbone's name), so training, evaluation and
raw-text export are those of every pair family. Zoo entries `bi_encoder_minilm` and `cross_encoder_minilm`
(`zoo/encoder_rankers/`, over all-MiniLM-L6-v2: `backbone=minilm-l6`), search space `tuning/encoder_rankers.json`.
"""

from keras_match import families
from keras_match.models.encoder_rankers.builder import build_bi_encoder
from keras_match.models.encoder_rankers.builder import build_cross_encoder
from keras_match.models.encoder_rankers.builder import start_at_the_cosine
from keras_match.models.encoder_rankers.packed_pair import PackedPairTransformer
from keras_match.models.encoder_rankers.packed_pair import pack_pair
from keras_match.models.encoder_rankers.sentence_embedding import SentenceEmbedding
from keras_match.models.encoder_rankers.siamese_features import SIAMESE_FEATURES
from keras_match.models.encoder_rankers.siamese_features import SiameseFeatures
from keras_match.settings import POSITIVE_NUMBER
from keras_match.settings import Rule
from keras_match.settings import is_int

__all__ = ["build_bi_encoder", "build_cross_encoder", "start_at_the_cosine", "PackedPairTransformer", "pack_pair",
           "SentenceEmbedding", "SiameseFeatures", "SIAMESE_FEATURES", "FAMILY"]

FAMILY = families.register(families.Family(
    name="encoder_rankers",
    builders={"bi_encoder": build_bi_encoder, "cross_encoder": build_cross_encoder},
    rules={"cosine_scale": POSITIVE_NUMBER,
           "max_length": Rule(lambda v: v is None or (is_int(v) and v >= 2), "null or an integer >= 2")},
))
