# cmake/tokenizer.cmake: filled in by the tokenizer work
