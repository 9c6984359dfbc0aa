# cmake/trainer.cmake: filled in by the trainer work
