"""The lab checking itself: against a plain loop of each library (plainloop, calibrate), against
nginx (crosscheck), and its own speed and overhead (selfbench, with the drivers of known work in
instruments/)."""
