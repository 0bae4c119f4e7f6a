"""Simulated consumers that really consume: the consumer client driven in-process, fetching
from the topic registry (seed 002's Fetcher), committing, and showing lag."""
