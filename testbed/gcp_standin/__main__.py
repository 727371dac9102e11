"""`python -m testbed.gcp_standin ENGINE_ADDRESS`: serve the stand-in GCP provider."""

import argparse

from testbed.gcp_standin.provider import serve

parser = argparse.ArgumentParser(description="nemo-rl-gke test bed: stand-in gcp provider")
parser.add_argument("engine", help="the Pulumi engine's address")
known, _ = parser.parse_known_args()
serve(known.engine)
