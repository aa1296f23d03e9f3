import sys
from pathlib import Path

# The replay helpers and the reference shim live beside the tests.
sys.path.insert(0, str(Path(__file__).resolve().parent))
