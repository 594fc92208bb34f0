from meshnav.cli import main

main()
