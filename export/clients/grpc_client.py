"""Rank candidate answers for a question with a keras-match model behind TensorFlow Serving's gRPC API.

    python export/clients/grpc_client.py --host localhost --port 8500 --model mcan_fm \
        --question "When was the Teapot Dome scandal?" \
        --answer "The scandal broke in 1923 ." --answer "Teapots are made of clay ."

Prints one line per candidate, best first: rank, score (probability of relevance), answer. With
`--signature rank` (the default) one `PredictRequest` carries the question (a scalar string) and the candidates;
with `--signature serving_default` it carries `question` and `answer` string tensors of the same length.
The requests come from `keras_match.serving` (the functions the tests and the warmup file use).
Needs the `serving` extra: `pip install keras-match[serving]` (tensorflow-serving-api, grpcio).
"""

import sys

import grpc
from tensorflow_serving.apis import prediction_service_pb2_grpc

from keras_match import serving


def rank(host, port, model, question, answers, signature="rank", version=None, timeout=30.0):
    """Scores of `answers` for `question` and the candidate order (best first): `(scores, order)`.

    Raises:
        grpc.RpcError: the server refused the request (its status and message are in the error).
    """
    if signature == serving.RANK_SIGNATURE:
        request = serving.grpc_rank_request(question, answers, model, version=version)
    else:
        request = serving.grpc_predict_request([question] * len(answers), answers, model, signature, version)
    with grpc.insecure_channel(f"{host}:{port}") as channel:
        stub = prediction_service_pb2_grpc.PredictionServiceStub(channel)
        outputs = serving.parse_predict_response(stub.Predict(request, timeout=timeout))
    if signature == serving.RANK_SIGNATURE:
        return outputs["scores"].tolist(), outputs["order"].tolist()
    scores = outputs["score"].tolist()
    return scores, sorted(range(len(scores)), key=lambda i: -scores[i])


def main(argv=None):
    return serving.rank_command(rank, __doc__.split("\n")[0], 8500, argv)


if __name__ == "__main__":
    try:
        main()
    except grpc.RpcError as error:
        sys.exit(f"grpc_client: {error.code().name}: {error.details()}")
