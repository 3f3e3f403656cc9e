"""Private bandit algorithms assembled from certified mechanisms, with per-user accounting."""
