"""The ground floor: errors, argument validation, file I/O and the frame spec; imports nothing above it."""
