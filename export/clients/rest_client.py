"""Rank candidate answers for a question with a keras-match model behind TensorFlow Serving's REST API.

    python export/clients/rest_client.py --host localhost --port 8501 --model mcan_fm \
        --question "When was the Teapot Dome scandal?" \
        --answer "The scandal broke in 1923 ." --answer "Teapots are made of clay ."

Prints one line per candidate, best first: rank, score (probability of relevance), answer. With
`--signature rank` (the default) the server scores and orders the candidates in one call
(`{"signature_name": "rank", "inputs": {"question": ..., "answers": [...]}}`); with
`--signature serving_default` the client sends one (question, answer) instance per candidate and sorts.
The request bodies come from `keras_match.serving`, the same functions the tests feed to the exported model.
Needs only `keras_match.serving` (numpy and the standard library; no TensorFlow).
"""

import json
import sys
import urllib.error
import urllib.request

from keras_match import serving


def predict(host, port, model, body, version=None, timeout=30.0):
    """POST `body` to `http://HOST:PORT/v1/models/MODEL[/versions/V]:predict`; returns the decoded JSON.

    Raises:
        RuntimeError: the server answered with an HTTP error (its message is included).
    """
    url = f"http://{host}:{port}/v1/models/{model}" + (f"/versions/{version}" if version else "") + ":predict"
    request = urllib.request.Request(url, data=json.dumps(body).encode("utf-8"),
                                     headers={"Content-Type": "application/json"}, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return json.loads(response.read())
    except urllib.error.HTTPError as error:
        raise RuntimeError(f"{url}: HTTP {error.code}: {error.read().decode('utf-8', 'replace')}") from None


def rank(host, port, model, question, answers, signature="rank", version=None):
    """Scores of `answers` for `question` and the candidate order (best first): `(scores, order)`."""
    if signature == serving.RANK_SIGNATURE:
        response = predict(host, port, model, serving.rest_rank_body(question, answers), version)
        outputs = serving.parse_rest_response(response, ["order", "scores"])
        return outputs["scores"].tolist(), outputs["order"].tolist()
    body = serving.rest_predict_body([question] * len(answers), answers, signature_name=signature)
    scores = serving.parse_rest_response(predict(host, port, model, body, version))["score"].tolist()
    order = sorted(range(len(scores)), key=lambda i: -scores[i])  # stable: ties keep the input order
    return scores, order


def main(argv=None):
    return serving.rank_command(rank, __doc__.split("\n")[0], 8501, argv)


if __name__ == "__main__":
    try:
        main()
    except (RuntimeError, OSError) as error:
        sys.exit(f"rest_client: {error}")
