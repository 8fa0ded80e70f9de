"""Write the model_config_list file with which one TensorFlow Serving process serves several models.

    python export/model_config.py mcan_fm mcan_sm=/models/mcan_sm --version mcan_sm=1,2 \
        -o export/out/models.config

Each MODEL is `NAME` or `NAME=BASE_PATH`, BASE_PATH being the model's base folder *as the server sees it*
(default `/models/NAME`, where export/docker-compose.yml mounts export/out). `--version NAME=V1,V2` serves
exactly these versions of NAME instead of the latest. Uses `keras_match.serving.write_model_config`.
"""

import argparse

from keras_match import serving


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("models", nargs="+", metavar="NAME[=BASE_PATH]")
    parser.add_argument("--version", action="append", default=[], metavar="NAME=V1,V2",
                        help="serve these versions of NAME (repeatable); default: the latest")
    parser.add_argument("-o", "--output", default="export/out/models.config")
    args = parser.parse_args(argv)
    models = {}
    for item in args.models:
        name, _, base_path = item.partition("=")
        models[name] = base_path or f"/models/{name}"
    versions = {}
    for item in args.version:
        name, _, values = item.partition("=")
        try:
            versions[name] = [int(v) for v in values.split(",") if v]
        except ValueError:
            parser.error(f"--version {item!r}: expected NAME=V1,V2 with integer versions")
    try:
        path = serving.write_model_config(models, args.output, versions)
    except ValueError as error:
        parser.error(str(error))
    print(f"model config for {', '.join(models)} written to {path}")
    return path


if __name__ == "__main__":
    main()
