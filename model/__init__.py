"""The shared model at the bottom of gridemu's imports: job columns, message columns,
random streams, errors and number checks. It imports nothing of gridemu."""
