from dpfim.cli import main

main()
