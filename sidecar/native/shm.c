/*
 * cornserve_shm: map a /dev/shm file into this process as an ArrayBuffer (zero-copy views for the sidecar).
 *
 *   map(path: string, size: number, populate: boolean): ArrayBuffer
 *
 * The mapping is MAP_SHARED and read-write; the file descriptor is closed right after mmap (the mapping
 * keeps the pages). The ArrayBuffer is external: its finalizer munmaps when V8 collects it, so a view
 * can never outlive its mapping. `populate` asks the kernel to pre-fault the page tables (MAP_POPULATE)
 * so the first copy into a slot does not pay one page fault per 4 KiB.
 */
#define NAPI_VERSION 8
#include <node_api.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <unistd.h>

static void unmap_finalize(napi_env env, void *data, void *hint) {
  (void)env;
  munmap(data, (size_t)(uintptr_t)hint);
}

static napi_value throw_errno(napi_env env, const char *what, const char *path) {
  char msg[4096 + 256];
  snprintf(msg, sizeof msg, "%s %s: %s", what, path, strerror(errno));
  napi_throw_error(env, "SIDECAR_SHM_MAP", msg);
  return NULL;
}

static napi_value map_file(napi_env env, napi_callback_info info) {
  size_t argc = 3;
  napi_value argv[3];
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 2) {
    napi_throw_type_error(env, NULL, "map(path, size, populate?) expects at least 2 arguments");
    return NULL;
  }
  char path[4096];
  size_t len = 0;
  if (napi_get_value_string_utf8(env, argv[0], path, sizeof path, &len) != napi_ok) {
    napi_throw_type_error(env, NULL, "path must be a string");
    return NULL;
  }
  double sized = 0;
  if (napi_get_value_double(env, argv[1], &sized) != napi_ok || sized <= 0) {
    napi_throw_type_error(env, NULL, "size must be a positive number");
    return NULL;
  }
  bool populate = false;
  if (argc >= 3) napi_get_value_bool(env, argv[2], &populate);
  size_t size = (size_t)sized;

  int fd = open(path, O_RDWR);
  if (fd < 0) return throw_errno(env, "open", path);
  int flags = MAP_SHARED | (populate ? MAP_POPULATE : 0);
  void *addr = mmap(NULL, size, PROT_READ | PROT_WRITE, flags, fd, 0);
  int saved = errno;
  close(fd);
  if (addr == MAP_FAILED) {
    errno = saved;
    return throw_errno(env, "mmap", path);
  }
  napi_value ab;
  napi_status st = napi_create_external_arraybuffer(env, addr, size, unmap_finalize, (void *)(uintptr_t)size, &ab);
  if (st != napi_ok) {
    munmap(addr, size);
    napi_throw_error(env, "SIDECAR_SHM_MAP", "napi_create_external_arraybuffer failed");
    return NULL;
  }
  return ab;
}

static napi_value set_rcvlowat(napi_env env, napi_callback_info info) {
  size_t argc = 2;
  napi_value argv[2];
  int32_t fd = -1, bytes = 1;
  if (napi_get_cb_info(env, info, &argc, argv, NULL, NULL) != napi_ok || argc < 2
      || napi_get_value_int32(env, argv[0], &fd) != napi_ok || napi_get_value_int32(env, argv[1], &bytes) != napi_ok) {
    napi_throw_type_error(env, NULL, "setRcvLowat(fd, bytes) expects two integers");
    return NULL;
  }
  int v = bytes < 1 ? 1 : bytes;
  if (setsockopt(fd, SOL_SOCKET, SO_RCVLOWAT, &v, sizeof v) != 0) {
    char msg[256];
    snprintf(msg, sizeof msg, "setsockopt(SO_RCVLOWAT, %d) on fd %d: %s", v, fd, strerror(errno));
    napi_throw_error(env, "SIDECAR_SOCKOPT", msg);
    return NULL;
  }
  return NULL;
}

static napi_value init(napi_env env, napi_value exports) {
  napi_value fn;
  napi_create_function(env, "map", NAPI_AUTO_LENGTH, map_file, NULL, &fn);
  napi_set_named_property(env, exports, "map", fn);
  napi_create_function(env, "setRcvLowat", NAPI_AUTO_LENGTH, set_rcvlowat, NULL, &fn);
  napi_set_named_property(env, exports, "setRcvLowat", fn);
  return exports;
}

NAPI_MODULE(NODE_GYP_MODULE_NAME, init)
