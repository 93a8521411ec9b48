SELECT id FROM fingerprints WHERE service = $service AND digest = $digest;
