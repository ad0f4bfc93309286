{
  "targets": [
    {
      "target_name": "cornserve_shm",
      "sources": ["shm.c"],
      "cflags": ["-O2", "-Wall"]
    }
  ]
}
