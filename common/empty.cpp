// Lets a library with no sources of its own yet still be a static library.
