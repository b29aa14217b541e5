# Shared by the GPU benchmark scripts (sourced, not run).
#
# median: the median of the numbers on standard input, one a line ("nan" for none).
median() { sort -g | awk '{a[NR]=$1} END {if (NR == 0) print "nan"; else if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }

#
# run_program PROGRAM CONFIG LENGTH: runs the example service (build-service/cutriage_service, the
# agent linked) for LENGTH seconds, or bench/torch_loop.py (the agent injected from
# $BUILD/agent/libcutriage.so, BUILD default build-gpu) for LENGTH steps, with CONFIG: CUTRIAGE_*
# settings separated by ';', or empty for the agent off. The service takes CONFIG through
# cutriage_init (SERVICE_CUTRIAGE), the injected agent as environment variables. Other variables
# (SERVICE_WINDOW_MS, TORCH_LOOP_WINDOW_MS, CUDA_VISIBLE_DEVICES) pass through. Prints the
# program's stdout and stderr together; returns its status.
run_program() {
  local program="$1" cfg="$2" length="$3"
  case "$program" in
    service) SERVICE_CUTRIAGE="${cfg:-CUTRIAGE_ENABLE=0}" build-service/cutriage_service "$length" 2>&1 ;;
    torch)
      if [ -z "$cfg" ]; then
        python3 bench/torch_loop.py "$length" 2>&1
      else
        # Word splitting on ';' gives one NAME=VALUE per setting: values must hold no spaces.
        env $(echo "$cfg" | tr ';' ' ') CUDA_INJECTION64_PATH="$PWD/${BUILD:-build-gpu}/agent/libcutriage.so" \
          python3 bench/torch_loop.py "$length" 2>&1
      fi
      ;;
    *) echo "program: service or torch" >&2; return 2 ;;
  esac
}
