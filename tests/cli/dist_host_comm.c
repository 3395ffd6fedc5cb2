/* A host program that runs MPI itself and hands libtrainrt its own communicator
 * (trainrt_config_set_mpi_comm; tests/cli/dist_mpirun.sh runs it under mpirun -np 2).
 *   usage: dist_host_comm CONFIG same|split
 * same: a communicator of every rank; split: one of each rank alone (MPI_Comm_split by rank).
 * Prints "rank R world W loss L" for its session and exits 0, or prints the error and exits 1. */
#include <mpi.h>
#include <stdio.h>
#include <string.h>
#include <trainrt/trainrt.h>

int main(int argc, char** argv) {
    int provided = 0, rank = 0, ok = 1;
    if (argc != 3) return 2;
    MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm comm;
    MPI_Comm_split(MPI_COMM_WORLD, strcmp(argv[2], "split") == 0 ? rank : 0, rank, &comm);

    trainrt_config* config = NULL;
    trainrt_session* session = NULL;
    trainrt_step_result r = TRAINRT_STEP_RESULT_INIT;
    trainrt_metrics m = TRAINRT_METRICS_INIT;
    if (trainrt_config_from_file(&config, argv[1]) != TRAINRT_OK ||
        trainrt_config_set_mpi_comm(config, &comm) != TRAINRT_OK ||
        trainrt_session_create(&session, config) != TRAINRT_OK) {
        fprintf(stderr, "rank %d: %s\n", rank, trainrt_last_error_message());
        ok = 0;
    }
    for (int k = 0; ok && k < 3; ++k) ok = trainrt_session_step(&r, session) == TRAINRT_OK;
    if (ok) ok = trainrt_session_sync(&r, session) == TRAINRT_OK;
    if (ok) ok = trainrt_session_metrics(&m, session) == TRAINRT_OK;
    if (ok) printf("rank %d world %d loss %.9g\n", m.rank, m.world_size, r.loss);
    else fprintf(stderr, "rank %d: %s\n", rank, trainrt_last_error_message());
    trainrt_session_destroy(session);
    trainrt_config_destroy(config);
    MPI_Comm_free(&comm);
    MPI_Finalize();
    return ok ? 0 : 1;
}
