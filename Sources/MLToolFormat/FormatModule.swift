// MLToolFormat: the native model file (docs/FORMAT.md): read (mmap) / validate / write (atomic).
