"""nbgrader configuration of the course's student notebooks.

`python -m grader release` copies this file into a scratch folder, converts each jupytext
source source/<assignment>/<name>.py into source/<assignment>/<name>.ipynb there
(grader/release/notebooks.py), runs `nbgrader generate_assignment <assignment> --force` (offline), then
copies release/<assignment>/*.ipynb into the template's notebooks/. The notebooks are not graded
(the exercise modules are); their solution cells are small explorations, which nbgrader
replaces with the stub below.
"""

c = get_config()  # noqa: F821 - provided by nbgrader when it loads this file

c.CourseDirectory.course_id = "attention"
c.CourseDirectory.source_directory = "source"
c.CourseDirectory.release_directory = "release"

# What a student sees instead of an exploration's solution. No `raise NotImplementedError`:
# nothing later in a notebook depends on an exploration, so "Run All" keeps going.
c.ClearSolutions.code_stub = {"python": "# YOUR CODE HERE\n"}
c.ClearSolutions.text_stub = "YOUR ANSWER HERE"
