from .cli.main import main

if __name__ == "__main__":  # not in the processes multiprocessing spawns (a Dask LocalCluster)
    main()
