"""The packages of keras-match, for setuptools; everything else (metadata, dependencies, package data, entry
points) is in setup.cfg.

Every package under keras_match/ is found here, so a new model family (`keras_match/models/<family>/`) needs no
line in any packaging file; the top-level zoo/ and tuning/ folders are installed as keras_match.zoo_presets and
keras_match.tuning_spaces (setup.cfg's package_dir).
"""

from setuptools import find_packages, setup

setup(packages=find_packages(include=["keras_match", "keras_match.*"])
      + ["keras_match.zoo_presets", "keras_match.tuning_spaces"])
