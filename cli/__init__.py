"""The top floor: the `iofp` command, assembled from each stage's commands. Nothing imports it but
the console script and the tests."""
