"""Model families, one folder each (`keras_match.models.<family>`): the family's own layers, its functional-API
builders and its registration (`keras_match.zoo.Family`), which the zoo finds by itself.

- `mcan`: Multi-Cast Attention Networks (Tay, Luu & Hui, KDD 2018), `build_mcan`;
- `ctrn`: Cross Temporal Recurrent Networks and their QRNN baseline (Tay, Luu & Hui, AAAI 2018), `build_ctrn`,
  `build_qrnn_matcher`;
- `compare_aggregate`: Compare-Aggregate (Wang & Jiang, ICLR 2017), `build_compare_aggregate`.

`keras_match.models.common` holds what every builder shares (token-id inputs, the embedding, the pair features
and the head, `matching_model`).
"""
