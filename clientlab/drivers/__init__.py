"""The drivers: their manifests, builds and runtimes, the job a scenario becomes for them, the
protocol the lab speaks with their processes, and the check of what they did."""
