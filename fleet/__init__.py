"""The quarterly fleet review on Spark (placeholder until fleet/job.py lands)."""
