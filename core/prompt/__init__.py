"""What the model reads at each step: the system prompt (the profile's prompt files, each
tool a line until its manual is needed, context variables), the history with its
entries, and fitting both into the model's window (compression, long results saved
for `§§include`, the images a model is shown)."""
